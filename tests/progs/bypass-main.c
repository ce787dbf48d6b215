/* usage: bypass-main deepbind|dlmopen|plain: one traced cudaMalloc/cudaFree
 * pair, then libbypass.so opened that way makes one pair of its own. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "plain";
	void *p;
	if (cudaMalloc(&p, 1 << 20) != cudaSuccess || cudaFree(p) != cudaSuccess)
		return 1;
	void *h = !strcmp(how, "dlmopen")    ? dlmopen(LM_ID_NEWLM, "libbypass.so", RTLD_NOW)
		  : !strcmp(how, "deepbind") ? dlopen("libbypass.so", RTLD_NOW | RTLD_DEEPBIND)
					     : dlopen("libbypass.so", RTLD_NOW);
	if (!h) {
		printf("open: %s\n", dlerror());
		return 1;
	}
	int (*alloc)(size_t) = (int (*)(size_t))dlsym(h, "bypass_alloc");
	int rc = alloc ? alloc(2 << 20) : -3;
	printf("%s: bypass_alloc = %d\n", how, rc);
	/* dlerror is untouched by the tracer's dlopen hook */
	printf("dlerror after: %s\n", dlerror() ? "set" : "(null)");
	return rc != 0;
}
