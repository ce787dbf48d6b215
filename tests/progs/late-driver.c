/* late-driver (t-route-no-driver): asks for the driver before any is loaded
 * (as a program probing for CUDA does), then loads libdrvuser.so, which
 * links the driver, RTLD_LOCAL: no lookup of the driver that the tracer
 * sees. The tracer must still find it for what it asks the driver itself,
 * such as each allocation's device. argv[1]: libdrvuser.so's path. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	printf("before: cuMemAlloc_v2 %s\n",
	       dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") ? "found" : "not found");
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	int (*alloc_free)(int) = (int (*)(int))dlsym(h, "drvuser_alloc_free");
	int failures = alloc_free ? alloc_free(3) : -1;
	printf("3 cuMemAlloc_v2/cuMemFree_v2 pairs through a late, local driver: %d failed\n",
	       failures);
	return failures ? 1 : 0;
}
