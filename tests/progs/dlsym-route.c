/* The dlsym route: code that never links libcuda but opens it and looks
 * functions up by name, as XLA/JAX/TensorFlow and Numba do, plus dlvsym,
 * the legacy unversioned names, and dlsym(RTLD_NEXT) from a library.
 *
 * Calls made (what the integration test counts):
 *   XLA style (exact ELF names):  cuMemAlloc_v2 1 MiB, cuMemFree_v2,
 *                                 cuMemAllocAsync_ptsz 2 MiB, cuMemFreeAsync_ptsz
 *   Numba style ("name_v2", then "name"): cuMemAlloc_v2 3 MiB, cuMemFree_v2,
 *                                 cuMemHostAlloc 4096, cuMemFreeHost
 *   exact:   cuMemAllocManaged 8192 + cuMemFree_v2
 *   dlvsym:  cudaMalloc 5 MiB + cudaFree (libcudart.so.13's version node)
 *   legacy:  "cuMemAlloc" (32-bit) 65536, "cuMemFree" (32-bit): the tracer
 *            must not record these as cuMemAlloc_v2/cuMemFree_v2 nor break
 *            them (a 64-bit store into the 32-bit slot clobbers the canary).
 *   RTLD_NEXT from libnextcheck.so must find libnextcheck2.so's nc_value. */
#include <dlfcn.h>
#include <stdint.h>

#include "progs.h"

int nc_next_value(void);
int nc_missing_is_null(void);

static void *must(void *p, const char *what)
{
	if (!p) {
		printf("lookup of %s failed: %s\n", what, dlerror());
		exit(1);
	}
	return p;
}

#define SYM(h, name) must(dlsym(h, name), name)

/* Numba's CudaDriver: try the _v2 name, fall back to the plain one. */
static void *numba_sym(void *h, const char *base)
{
	char v2[128];
	snprintf(v2, sizeof v2, "%s_v2", base);
	void *p = dlsym(h, v2);
	printf("numba %s -> %s\n", base, p ? v2 : base);
	return p ? p : SYM(h, base);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	void *h = must(dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), "libcuda.so.1");

	/* XLA: a lazily filled table of exact ELF names. */
	CUresult (*init)(unsigned) = SYM(h, "cuInit");
	CUresult (*retain)(CUcontext *, CUdevice) = SYM(h, "cuDevicePrimaryCtxRetain");
	CUresult (*set_current)(CUcontext) = SYM(h, "cuCtxSetCurrent");
	CUresult (*alloc)(CUdeviceptr *, size_t) = SYM(h, "cuMemAlloc_v2");
	CUresult (*release)(CUdeviceptr) = SYM(h, "cuMemFree_v2");
	CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream) = SYM(h, "cuMemAllocAsync_ptsz");
	CUresult (*free_async)(CUdeviceptr, CUstream) = SYM(h, "cuMemFreeAsync_ptsz");
	CUcontext ctx;
	CUdeviceptr a, b;
	CHECK(init(0), CUDA_SUCCESS);
	CHECK(retain(&ctx, 0), CUDA_SUCCESS);
	CHECK(set_current(ctx), CUDA_SUCCESS);
	CHECK(alloc(&a, 1 * MiB), CUDA_SUCCESS);
	CHECK(release(a), CUDA_SUCCESS);
	CHECK(alloc_async(&b, 2 * MiB, NULL), CUDA_SUCCESS);
	CHECK(free_async(b, NULL), CUDA_SUCCESS);

	/* Numba: ctypes attribute lookups. */
	CUresult (*nalloc)(CUdeviceptr *, size_t) = numba_sym(h, "cuMemAlloc");
	CUresult (*nfree)(CUdeviceptr) = numba_sym(h, "cuMemFree");
	CUresult (*nhost)(void **, size_t, unsigned) = numba_sym(h, "cuMemHostAlloc");
	CUresult (*nfreehost)(void *) = numba_sym(h, "cuMemFreeHost");
	CUdeviceptr c;
	void *hp;
	CHECK(nalloc(&c, 3 * MiB), CUDA_SUCCESS);
	CHECK(nfree(c), CUDA_SUCCESS);
	CHECK(nhost(&hp, 4096, 0), CUDA_SUCCESS);
	memset(hp, 3, 4096);
	CHECK(nfreehost(hp), CUDA_SUCCESS);

	CUresult (*managed)(CUdeviceptr *, size_t, unsigned) = SYM(h, "cuMemAllocManaged");
	CUdeviceptr m;
	CHECK(managed(&m, 8192, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
	CHECK(release(m), CUDA_SUCCESS);

	/* dlvsym: libcudart's symbols carry the version node libcudart.so.13
	 * (libcuda's carry none, and dlvsym finds no unversioned symbol). */
	EXPECT(dlvsym(h, "cuMemAlloc_v2", "libcuda.so.1") == NULL);
	void *rt = must(dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL), "libcudart.so.13");
	cudaError_t (*rmalloc)(void **, size_t) =
	    must(dlvsym(rt, "cudaMalloc", "libcudart.so.13"), "dlvsym cudaMalloc");
	cudaError_t (*rfree)(void *) =
	    must(dlvsym(rt, "cudaFree", "libcudart.so.13"), "dlvsym cudaFree");
	EXPECT(dlvsym(rt, "cudaMalloc", "libcudart.so.12") == NULL);
	void *rp;
	CHECK(rmalloc(&rp, 5 * MiB), cudaSuccess);
	CHECK(rfree(rp), cudaSuccess);

	/* The unversioned names are the 32-bit ABI and must stay so. */
	CUresult (*legacy_alloc)(unsigned int *, unsigned int) = SYM(h, "cuMemAlloc");
	CUresult (*legacy_free)(unsigned int) = SYM(h, "cuMemFree");
	EXPECT((void *)legacy_alloc != (void *)alloc);
	struct {
		unsigned int ptr;
		unsigned int canary;
	} slot = {0, 0xc0ffee};
	CHECK(legacy_alloc(&slot.ptr, 65536), CUDA_SUCCESS);
	EXPECT(slot.canary == 0xc0ffee);
	EXPECT(slot.ptr != 0 && slot.ptr % 512 == 0);
	CHECK(legacy_free(slot.ptr), CUDA_SUCCESS);
	CHECK(legacy_free(slot.ptr), CUDA_ERROR_INVALID_VALUE);

	/* RTLD_NEXT is relative to the library that calls dlsym. */
	CHECK(nc_next_value(), 2);
	CHECK(nc_missing_is_null(), 1);

	return prog_exit("dlsym-route");
}
