/* libcountdl.so, preloaded after the tracer (t-route-no-driver): counts
 * dlopen("libcuda.so.1", RTLD_NOLOAD), which searches the library path on
 * disk, and prints the count at exit. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef void *(*dlopen_fn)(const char *, int);
static unsigned long driver_lookups;

void *dlopen(const char *file, int mode)
{
	static dlopen_fn real;
	if (!real)
		real = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
	if (file && (mode & RTLD_NOLOAD) && !strcmp(file, "libcuda.so.1"))
		__atomic_fetch_add(&driver_lookups, 1, __ATOMIC_RELAXED);
	return real ? real(file, mode) : NULL;
}

__attribute__((destructor)) static void report(void)
{
	fprintf(stderr, "countdl: %lu\n", __atomic_load_n(&driver_lookups, __ATOMIC_RELAXED));
}
