/* Reloads CUDA (t-route-reload). Each round opens it, allocates 3 times
 * (round N: N MiB each) and closes it, which unloads it: this program links
 * no CUDA library. Between the rounds, pages are mapped over the unloaded
 * object's old code, so it loads elsewhere the second time and a pointer
 * into the first load, kept and called, faults.
 *   reload-main runtime PLUGIN: PLUGIN links the runtime, cudaMalloc/cudaFree
 *   reload-main driver: dlopen("libcuda.so.1") and dlsym, cuMemAlloc_v2/cuMemFree_v2
 * Exit 0: all done; 1: an allocation failed; 2: setup failed; 3: the old
 * range could not be mapped. */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cuda-types.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

struct span {
	const char *soname;
	uintptr_t lo, hi; /* its executable segment; 0: not loaded */
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct span *s = data;
	const char *name = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	name = name ? name + 1 : info->dlpi_name;
	if (!name || strcmp(name, s->soname))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			s->lo = info->dlpi_addr + ph->p_vaddr;
			s->hi = s->lo + ph->p_memsz;
		}
	}
	return 1;
}

static void *must(void *p, const char *what)
{
	if (!p)
		fprintf(stderr, "%s: %s\n", what, dlerror());
	return p;
}

/* Through the plugin: its calls bind to the runtime it links. */
static int runtime_round(void *h, size_t size)
{
	int (*alloc_free)(int, size_t) =
	    (int (*)(int, size_t))must(dlsym(h, "plugin_alloc_free"), "plugin_alloc_free");
	return alloc_free ? alloc_free(3, size) : -1;
}

/* The XLA route: the driver's functions by name. */
static int driver_round(void *h, size_t size)
{
	CUresult (*init)(unsigned) = must(dlsym(h, "cuInit"), "cuInit");
	CUresult (*retain)(CUcontext *, CUdevice) =
	    must(dlsym(h, "cuDevicePrimaryCtxRetain"), "cuDevicePrimaryCtxRetain");
	CUresult (*set_current)(CUcontext) = must(dlsym(h, "cuCtxSetCurrent"), "cuCtxSetCurrent");
	CUresult (*alloc)(CUdeviceptr *, size_t) = must(dlsym(h, "cuMemAlloc_v2"), "cuMemAlloc_v2");
	CUresult (*release)(CUdeviceptr) = must(dlsym(h, "cuMemFree_v2"), "cuMemFree_v2");
	CUcontext ctx;
	if (!init || !retain || !set_current || !alloc || !release || init(0) || retain(&ctx, 0) ||
	    set_current(ctx))
		return -1;
	int failures = 0;
	for (int i = 0; i < 3; i++) {
		CUdeviceptr p = 0;
		CUresult a = alloc(&p, size);
		CUresult f = release(p);
		failures += a != CUDA_SUCCESS || f != CUDA_SUCCESS || !p;
	}
	return failures;
}

static int one_round(int driver, const char *path, int round, struct span *s)
{
	void *h = must(dlopen(path, RTLD_NOW | RTLD_LOCAL), path);
	if (!h)
		return 2;
	s->lo = s->hi = 0;
	dl_iterate_phdr(find_object, s);
	if (!s->lo) {
		fprintf(stderr, "%s is not loaded\n", s->soname);
		return 2;
	}
	size_t size = (size_t)round << 20;
	int failures = driver ? driver_round(h, size) : runtime_round(h, size);
	if (failures < 0)
		return 2;
	printf("round %d: 3 allocations and frees, %d failed\n", round, failures);
	if (dlclose(h)) {
		fprintf(stderr, "dlclose: %s\n", dlerror());
		return 2;
	}
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	int driver = argc > 1 && !strcmp(argv[1], "driver");
	if (!driver && (argc < 3 || strcmp(argv[1], "runtime"))) {
		fprintf(stderr, "usage: reload-main runtime PLUGIN | driver\n");
		return 2;
	}
	const char *soname = driver ? "libcuda.so.1" : "libcudart.so.13";
	const char *path = driver ? "libcuda.so.1" : argv[2];
	struct span first = {soname, 0, 0}, second = first, after = first;
	int r = one_round(driver, path, 1, &first);
	if (r)
		return r;
	dl_iterate_phdr(find_object, &after);
	if (after.lo) {
		fprintf(stderr, "%s is still loaded after dlclose\n", soname);
		return 2;
	}
	printf("%s is unloaded\n", soname);
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t lo = first.lo & ~(uintptr_t)(page - 1);
	size_t len = (first.hi - lo + (size_t)page - 1) & ~(size_t)(page - 1);
	void *m = mmap((void *)lo, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m != (void *)lo) { /* before Linux 4.17, MAP_FIXED_NOREPLACE is a mere hint */
		fprintf(stderr, "cannot map the old code range of %s\n", soname);
		return 3;
	}
	printf("pages mapped where its code was\n");
	r = one_round(driver, path, 2, &second);
	if (r)
		return r;
	if (second.lo < first.hi && first.lo < second.hi) {
		fprintf(stderr, "%s loaded again over its old code range\n", soname);
		return 2;
	}
	printf("%s loaded again elsewhere\n", soname);
	munmap(m, len);
	return 0;
}
