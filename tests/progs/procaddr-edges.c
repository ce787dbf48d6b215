/* cuGetProcAddress at the edges: every (name, CUDA version, flags) below,
 * through the five- and the four-argument form, prints the result, the
 * symbol status and which exported function the pointer is (by dlsym on
 * the driver's handle: untraced both are the driver's, traced both are the
 * tracer's wrapper for that name) or that it is NULL or left untouched.
 * A traced run must print exactly what an untraced one prints.
 *
 * Then calls through pointers looked up at old and new versions, so the
 * trace shows which variant each wrapper forwarded to:
 *   cuMemAlloc at 3020, 11000, 99000: cuMemAlloc_v2 of 1, 2, 3 MiB;
 *   cuMemFree at 99000: cuMemFree_v2 x3;
 *   cuMemAllocAsync at 99000, flags 1 / 2: cuMemAllocAsync 1 MiB,
 *   cuMemAllocAsync_ptsz 2 MiB, freed through cuMemFreeAsync flags 0 / 2. */
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
static gpa4_t gpa4;
static int untouched_marker;
#define UNTOUCHED ((void *)&untouched_marker)

/* Which exported variant of base p is, by name. */
static const char *which(const char *base, void *p)
{
	static const char *suffixes[] = {"", "_v2", "_v3", "_v4", "_ptsz", "_v2_ptsz"};
	static char name[128];
	if (!p)
		return "NULL";
	if (p == UNTOUCHED)
		return "untouched";
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		snprintf(name, sizeof name, "%s%s", base, suffixes[i]);
		if (dlsym(h, name) == p)
			return name;
	}
	return "an unexported function";
}

static void query(const char *base, int version, cuuint64_t flags)
{
	void *p = UNTOUCHED;
	CUdriverProcAddressQueryResult st = 99;
	CUresult r = gpa5(base, &p, version, flags, &st);
	printf("v2 %s %d flags %llu: %d status %d -> %s\n", base, version,
	       (unsigned long long)flags, r, st, which(base, p));
	p = UNTOUCHED;
	r = gpa5(base, &p, version, flags, NULL);
	printf("v2 no status %s %d flags %llu: %d -> %s\n", base, version,
	       (unsigned long long)flags, r, which(base, p));
	p = UNTOUCHED;
	r = gpa4(base, &p, version, flags);
	printf("v1 %s %d flags %llu: %d -> %s\n", base, version, (unsigned long long)flags, r,
	       which(base, p));
}

static void *get(const char *base, int version, cuuint64_t flags)
{
	void *p = NULL;
	CUdriverProcAddressQueryResult st;
	CHECK(gpa5(base, &p, version, flags, &st), CUDA_SUCCESS);
	return p;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 1;
	gpa5 = (gpa5_t)dlsym(h, "cuGetProcAddress_v2");
	gpa4 = (gpa4_t)dlsym(h, "cuGetProcAddress");
	if (!gpa5 || !gpa4)
		return 1;

	static const char *names[] = {
	    "cuMemAlloc",	 "cuMemFree",	     "cuMemAllocAsync", "cuMemFreeAsync",
	    "cuMemHostRegister", "cuCtxCreate",	     "cuDeviceGetUuid", "cuDevicePrimaryCtxRelease",
	    "cuMemCreate",	 "cuGetProcAddress", "cuDoesNotExist",	"",
	};
	static const int versions[] = {0,     2000,  3010,  3020,  6000,  6050, 10020,
				       11000, 11020, 11040, 12000, 12050, 99000};
	static const cuuint64_t flags[] = {CU_GET_PROC_ADDRESS_DEFAULT,
					   CU_GET_PROC_ADDRESS_LEGACY_STREAM,
					   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, 3, 4};
	for (size_t n = 0; n < sizeof names / sizeof names[0]; n++)
		for (size_t v = 0; v < sizeof versions / sizeof versions[0]; v++)
			for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
				query(names[n], versions[v], flags[f]);
	/* NULL symbol and NULL pfn, in both forms. */
	CUdriverProcAddressQueryResult st = 99;
	void *p = UNTOUCHED;
	printf("v2 NULL symbol: %d status %d -> %s\n", gpa5(NULL, &p, 12000, 0, &st), st,
	       which("", p));
	st = 99;
	printf("v2 NULL pfn: %d status %d\n", gpa5("cuMemAlloc", NULL, 12000, 0, &st), st);
	printf("v1 NULL symbol: %d -> %s\n", gpa4(NULL, &p, 12000, 0), which("", p));
	printf("v1 NULL pfn: %d\n", gpa4("cuMemAlloc", NULL, 12000, 0));

	/* Calls through what old and new versions gave. */
	CHECK(((CUresult(*)(unsigned))get("cuInit", 99000, 0))(0), CUDA_SUCCESS);
	CUcontext ctx;
	CHECK(((CUresult(*)(CUcontext *, CUdevice))get("cuDevicePrimaryCtxRetain", 99000, 0))(&ctx,
											      0),
	      CUDA_SUCCESS);
	CHECK(((CUresult(*)(CUcontext))get("cuCtxSetCurrent", 7000, 0))(ctx), CUDA_SUCCESS);
	free_t release = (free_t)get("cuMemFree", 99000, 0);
	CUdeviceptr d[3];
	CHECK(((alloc_t)get("cuMemAlloc", 3020, 0))(&d[0], 1 * MiB), CUDA_SUCCESS);
	CHECK(((alloc_t)get("cuMemAlloc", 11000, 0))(&d[1], 2 * MiB), CUDA_SUCCESS);
	CHECK(((alloc_t)get("cuMemAlloc", 99000, 0))(&d[2], 3 * MiB), CUDA_SUCCESS);
	for (int i = 0; i < 3; i++)
		CHECK(release(d[i]), CUDA_SUCCESS);
	CUdeviceptr a, b;
	CHECK(((alloc_async_t)get("cuMemAllocAsync", 99000, 1))(&a, 1 * MiB, NULL), CUDA_SUCCESS);
	CHECK(((alloc_async_t)get("cuMemAllocAsync", 99000, 2))(&b, 2 * MiB, NULL), CUDA_SUCCESS);
	CHECK(((free_async_t)get("cuMemFreeAsync", 99000, 0))(a, NULL), CUDA_SUCCESS);
	CHECK(((free_async_t)get("cuMemFreeAsync", 99000, 2))(b, NULL), CUDA_SUCCESS);
	return prog_exit("procaddr-edges");
}
