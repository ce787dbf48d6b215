/* Loads local-ext RTLD_LOCAL (as Python loads extensions) and allocates
 * through it: the runtime it links is then out of the global scope. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "liblocal-ext.so";
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	int (*alloc_free)(int) = (int (*)(int))dlsym(h, "ext_alloc_free");
	if (!alloc_free)
		return 2;
	int failures = alloc_free(5);
	printf("5 cudaMalloc/cudaFree pairs through an RTLD_LOCAL extension: %d failed\n",
	       failures);
	return failures ? 1 : 0;
}
