/* dlsym(RTLD_NEXT, ...) for CUDA names from the program itself, which is
 * linked against no CUDA library: each lookup must give what it gives
 * untraced (the tracer's exports are next only because it is preloaded).
 * Usage: nextmain [LIBCUDART]: with LIBCUDART, loads it RTLD_GLOBAL first,
 * then calls the cudaMalloc found (1 MiB) and frees it. Prints, per name,
 * "NAME: NULL" or "NAME: found" (plus the defining file's base name with -v). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*malloc_t)(void **, size_t);
typedef int (*free_t)(void *);

static void *next(const char *name, int verbose)
{
	void *p = dlsym(RTLD_NEXT, name);
	Dl_info info;
	const char *base = p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "?";
	if (strrchr(base, '/'))
		base = strrchr(base, '/') + 1;
	if (!p)
		printf("%s: NULL\n", name);
	else if (verbose)
		printf("%s: found in %s\n", name, base);
	else
		printf("%s: found\n", name);
	return p;
}

int main(int argc, char **argv)
{
	int verbose = argc > 1 && !strcmp(argv[1], "-v");
	const char *lib = argc > 1 + verbose ? argv[1 + verbose] : NULL;
	if (lib && !dlopen(lib, RTLD_NOW | RTLD_GLOBAL)) {
		printf("dlopen failed: %s\n", dlerror());
		return 2;
	}
	malloc_t m = (malloc_t)next("cudaMalloc", verbose);
	free_t f = (free_t)next("cudaFree", verbose);
	next("cuMemAlloc_v2", verbose);
	next("cuMemFree_v2", verbose);
	if (lib && m && f) {
		void *p = NULL;
		int r = m(&p, 1 << 20);
		printf("cudaMalloc = %d\n", r);
		printf("cudaFree = %d\n", f(p));
	}
	return 0;
}
