/* For the AT_SECURE test: run setuid, where the loader ignores LD_PRELOAD
 * and LD_LIBRARY_PATH, it loads the simulated driver and (unless TRACER is
 * "-") the tracer by absolute path, and allocates through the tracer's
 * exported wrappers (cuInit, not wrapped, from the driver). Usage: secure LIBCUDA TRACER|- */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/auxv.h>

#include "common/cuda-types.h"

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	void *cuda = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	void *entry = argv[2][0] == '-' ? cuda : dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL);
	if (!cuda || !entry) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(cuda, "cuInit"); /* not hooked */
	CUresult (*create)(CUcontext *, unsigned, CUdevice) =
	    (CUresult(*)(CUcontext *, unsigned, CUdevice))dlsym(entry, "cuCtxCreate_v2");
	CUresult (*alloc)(CUdeviceptr *, size_t) =
	    (CUresult(*)(CUdeviceptr *, size_t))dlsym(entry, "cuMemAlloc_v2");
	CUresult (*release)(CUdeviceptr) = (CUresult(*)(CUdeviceptr))dlsym(entry, "cuMemFree_v2");
	if (!init || !create || !alloc || !release) {
		fprintf(stderr, "dlsym: a function is missing\n");
		return 2;
	}
	CUcontext ctx;
	CUdeviceptr d;
	printf("AT_SECURE %lu\n", getauxval(AT_SECURE));
	printf("cuInit = %d\n", init(0));
	printf("cuCtxCreate_v2 = %d\n", create(&ctx, 0, 0));
	printf("cuMemAlloc_v2 = %d\n", alloc(&d, 1 << 20));
	printf("cuMemFree_v2 = %d\n", release(d));
	return 0;
}
