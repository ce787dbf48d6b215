/* The cuGetProcAddress route: the driver's own lookup by base name and CUDA
 * version, called directly (both the CUDA 12 five-argument form and the
 * CUDA 11.3 four-argument form, found with dlsym on the libcuda handle).
 *
 * Every pointer a lookup returns is compared with dlsym of the exported
 * name it should be: that holds untraced (both are the driver's) and must
 * hold traced (both must be the tracer's wrapper for that exact name).
 *
 * Allocations made (what the integration test counts):
 *   cuMemAlloc_v2: 1 MiB (v2, 12000), 512 KiB (4-arg, 11030),
 *                  3 MiB and 4 MiB (through the self-looked-up pointers);
 *   cuMemFree_v2 x4; cuMemAllocAsync 1 MiB + cuMemFreeAsync (flags 0);
 *   cuMemAllocAsync_ptsz 2 MiB + cuMemFreeAsync_ptsz (flags 2);
 *   legacy cuMemAlloc 65536 + cuMemFree (version 3010), never recorded. */
#include <dlfcn.h>
#include <stdint.h>

#include "progs.h"

typedef CUresult (*gpa5_t)(const char *, void **, int, cuuint64_t,
			   CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa4_t)(const char *, void **, int, cuuint64_t);
typedef CUresult (*alloc_t)(CUdeviceptr *, size_t);
typedef CUresult (*free_t)(CUdeviceptr);
typedef CUresult (*alloc_async_t)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*free_async_t)(CUdeviceptr, CUstream);

static void *h;
static gpa5_t gpa5;

/* Looks base up at version/flags and checks the answer is dlsym(expected). */
static void *lookup(const char *base, int version, cuuint64_t flags, const char *expected)
{
	void *p = (void *)1;
	CUdriverProcAddressQueryResult st = 99;
	CUresult r = gpa5(base, &p, version, flags, &st);
	printf("cuGetProcAddress_v2(%s, %d, %llu) = %d, status %d\n", base, version,
	       (unsigned long long)flags, r, st);
	void *want = dlsym(h, expected);
	printf("  is dlsym(%s): %s\n", expected, p && p == want ? "yes" : "NO");
	if (r != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || !p || p != want)
		prog_failures++;
	return p;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 1;
	gpa5 = (gpa5_t)dlsym(h, "cuGetProcAddress_v2");
	gpa4_t gpa4 = (gpa4_t)dlsym(h, "cuGetProcAddress");
	if (!gpa5 || !gpa4)
		return 1;

	/* Before cuInit, like the runtime's start-up. */
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))lookup("cuInit", 12000, 0, "cuInit");
	CHECK(init(0), CUDA_SUCCESS);
	CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))lookup(
	    "cuDevicePrimaryCtxRetain", 12000, 0, "cuDevicePrimaryCtxRetain");
	CUresult (*set_current)(CUcontext) =
	    (CUresult(*)(CUcontext))lookup("cuCtxSetCurrent", 12000, 0, "cuCtxSetCurrent");
	CUcontext ctx;
	CHECK(retain(&ctx, 0), CUDA_SUCCESS);
	CHECK(set_current(ctx), CUDA_SUCCESS);

	/* By base name and version. */
	alloc_t alloc = (alloc_t)lookup("cuMemAlloc", 12000, 0, "cuMemAlloc_v2");
	free_t release = (free_t)lookup("cuMemFree", 12000, 0, "cuMemFree_v2");
	CUdeviceptr a;
	CHECK(alloc(&a, 1 * MiB), CUDA_SUCCESS);
	CHECK(release(a), CUDA_SUCCESS);

	/* Flags 0 and 2: the legacy-stream and the per-thread (_ptsz) forms. */
	alloc_async_t aa = (alloc_async_t)lookup("cuMemAllocAsync", 12000, 0, "cuMemAllocAsync");
	free_async_t fa = (free_async_t)lookup("cuMemFreeAsync", 12000, 0, "cuMemFreeAsync");
	alloc_async_t aa2 =
	    (alloc_async_t)lookup("cuMemAllocAsync", 12000, 2, "cuMemAllocAsync_ptsz");
	free_async_t fa2 = (free_async_t)lookup("cuMemFreeAsync", 12000, 2, "cuMemFreeAsync_ptsz");
	lookup("cuMemAllocFromPoolAsync", 11020, 2, "cuMemAllocFromPoolAsync_ptsz");
	lookup("cuMemHostRegister", 6050, 0, "cuMemHostRegister_v2");
	lookup("cuMemHostRegister", 6000, 0, "cuMemHostRegister");
	CUdeviceptr b, c;
	CHECK(aa(&b, 1 * MiB, NULL), CUDA_SUCCESS);
	CHECK(fa(b, NULL), CUDA_SUCCESS);
	CHECK(aa2(&c, 2 * MiB, NULL), CUDA_SUCCESS);
	CHECK(fa2(c, NULL), CUDA_SUCCESS);

	/* The four-argument form of CUDA 11.3-11.8. */
	void *p = NULL;
	CHECK(gpa4("cuMemAlloc", &p, 11030, 0), CUDA_SUCCESS);
	EXPECT(p == dlsym(h, "cuMemAlloc_v2"));
	CUdeviceptr d;
	CHECK(((alloc_t)p)(&d, 512 * 1024), CUDA_SUCCESS);
	CHECK(release(d), CUDA_SUCCESS);

	/* Below 3.2 "cuMemAlloc" is the 32-bit function, which must work. */
	CUresult (*legacy_alloc)(unsigned int *, unsigned int) =
	    (CUresult(*)(unsigned int *, unsigned int))lookup("cuMemAlloc", 3010, 0, "cuMemAlloc");
	CUresult (*legacy_free)(unsigned int) =
	    (CUresult(*)(unsigned int))lookup("cuMemFree", 3010, 0, "cuMemFree");
	struct {
		unsigned int ptr, canary;
	} slot = {0, 0xc0ffee};
	CHECK(legacy_alloc(&slot.ptr, 65536), CUDA_SUCCESS);
	EXPECT(slot.canary == 0xc0ffee && slot.ptr != 0);
	CHECK(legacy_free(slot.ptr), CUDA_SUCCESS);

	/* Failures must look exactly as they do untraced. */
	CUdriverProcAddressQueryResult st = 99;
	p = (void *)1;
	CHECK(gpa5("cuNoSuchFunction", &p, 12000, 0, &st), CUDA_ERROR_NOT_FOUND);
	CHECK(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	EXPECT(p == NULL);
	p = (void *)1;
	CHECK(gpa4("cuNoSuchFunction", &p, 12000, 0), CUDA_ERROR_NOT_FOUND);
	EXPECT(p == NULL);
	st = 99;
	CHECK(gpa5("cuMemAllocAsync", &p, 11000, 0, &st), CUDA_ERROR_NOT_FOUND);
	CHECK(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	st = 99;
	CHECK(gpa5("", &p, 0, 0, &st), CUDA_ERROR_NOT_FOUND);
	CHECK(gpa5(NULL, &p, 12000, 0, &st), CUDA_ERROR_INVALID_VALUE);
	CHECK(gpa5("cuMemAlloc", NULL, 12000, 0, &st), CUDA_ERROR_INVALID_VALUE);

	/* The runtime's self-lookup, then lookups through what came back. */
	gpa4_t self4 = (gpa4_t)lookup("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
	gpa5_t self5 = (gpa5_t)lookup("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
	CHECK(self5("cuMemAlloc", &p, 12000, 0, &st), CUDA_SUCCESS);
	EXPECT(p == dlsym(h, "cuMemAlloc_v2"));
	CHECK(((alloc_t)p)(&d, 3 * MiB), CUDA_SUCCESS);
	CHECK(self5("cuMemFree", &p, 12000, 0, &st), CUDA_SUCCESS);
	CHECK(((free_t)p)(d), CUDA_SUCCESS);
	CHECK(self4("cuMemAlloc", &p, 12000, 0), CUDA_SUCCESS);
	EXPECT(p == dlsym(h, "cuMemAlloc_v2"));
	CHECK(((alloc_t)p)(&d, 4 * MiB), CUDA_SUCCESS);
	CHECK(release(d), CUDA_SUCCESS);

	return prog_exit("procaddr-route");
}
