// Plain CUDA C on a real GPU, for scripts/gpu-check.sh: every allocation
// route the issue names, each result printed so the checker can match the
// trace against what the program really did, pointer by pointer.
//
//   plain check      ALLOC/FREE/FAIL lines on stdout, exit 0 when every call
//                    returned what CUDA documents
//   plain loop N     N cudaMalloc+cudaFree pairs of 1 MiB, prints ns per pair
//
// Built twice by gpu-check.sh: -cudart shared and -cudart static (the static
// runtime reaches the driver only through cuGetProcAddress).
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

#define RT(call)                                                                   \
	do {                                                                           \
		cudaError_t rt_err_ = (call);                                              \
		if (rt_err_ != cudaSuccess) {                                              \
			printf("ERROR %s = %d (%s)\n", #call, (int)rt_err_,                    \
			       cudaGetErrorName(rt_err_));                                     \
			failures++;                                                            \
		}                                                                          \
	} while (0)
#define DRV(call)                                                                  \
	do {                                                                           \
		CUresult drv_err_ = (call);                                                \
		if (drv_err_ != CUDA_SUCCESS) {                                            \
			printf("ERROR %s = %d\n", #call, (int)drv_err_);                       \
			failures++;                                                            \
		}                                                                          \
	} while (0)

static void alloc_line(const char *kind, const void *p, size_t size)
{
	printf("ALLOC %s %p %zu\n", kind, p, size);
}
static void free_line(const char *kind, const void *p) { printf("FREE %s %p\n", kind, p); }

__global__ void touch(char *p, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = (char)i;
}

static int check(void)
{
	// The context first, so its own cost is not mixed into the first cudaMalloc.
	RT(cudaFree(0));

	// Device memory: three sizes, one not a multiple of anything.
	size_t dev_sizes[] = {1 << 20, 3 * (1 << 20) + 1, 64 << 20};
	void *dev[3];
	for (int i = 0; i < 3; i++) {
		RT(cudaMalloc(&dev[i], dev_sizes[i]));
		alloc_line("device", dev[i], dev_sizes[i]);
	}
	touch<<<(dev_sizes[1] + 255) / 256, 256>>>((char *)dev[1], dev_sizes[1]);
	RT(cudaDeviceSynchronize());

	// Pitched: the trace must hold pitch * height, what the driver reserved.
	void *pitched;
	size_t pitch = 0;
	RT(cudaMallocPitch(&pitched, &pitch, 1000, 100));
	alloc_line("pitch", pitched, pitch * 100);

	// Stream-ordered, from the device's default pool.
	cudaStream_t stream;
	RT(cudaStreamCreate(&stream));
	void *async_a, *async_b;
	RT(cudaMallocAsync(&async_a, 8 << 20, stream));
	RT(cudaMallocAsync(&async_b, 16 << 20, stream));
	alloc_line("async", async_a, 8 << 20);
	alloc_line("async", async_b, 16 << 20);
	RT(cudaFreeAsync(async_a, stream));
	RT(cudaFreeAsync(async_b, stream));
	free_line("async", async_a);
	free_line("async", async_b);
	RT(cudaStreamSynchronize(stream));

	// Managed and pinned host.
	void *managed, *pinned, *host_alloc;
	RT(cudaMallocManaged(&managed, 4 << 20, cudaMemAttachGlobal));
	alloc_line("managed", managed, 4 << 20);
	RT(cudaMallocHost(&pinned, 2 << 20));
	alloc_line("pinned", pinned, 2 << 20);
	RT(cudaHostAlloc(&host_alloc, 1 << 20, cudaHostAllocPortable));
	alloc_line("pinned", host_alloc, 1 << 20);

	// VMM: physical memory, a reservation, a mapping.
	int dev_ordinal = 0;
	RT(cudaGetDevice(&dev_ordinal));
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev_ordinal;
	size_t gran = 0;
	DRV(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	size_t vmm_size = 4 * gran;
	CUmemGenericAllocationHandle handle;
	CUdeviceptr va = 0;
	DRV(cuMemCreate(&handle, vmm_size, &prop, 0));
	printf("ALLOC vmm_physical 0x%llx %zu\n", (unsigned long long)handle, vmm_size);
	DRV(cuMemAddressReserve(&va, 2 * vmm_size, 0, 0, 0));
	printf("ALLOC reserve 0x%llx %zu\n", (unsigned long long)va, 2 * vmm_size);
	DRV(cuMemMap(va, vmm_size, 0, handle, 0));
	printf("ALLOC map 0x%llx %zu\n", (unsigned long long)va, vmm_size);
	CUmemAccessDesc access;
	memset(&access, 0, sizeof access);
	access.location = prop.location;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	DRV(cuMemSetAccess(va, vmm_size, &access, 1));
	touch<<<(vmm_size + 255) / 256, 256>>>((char *)va, vmm_size);
	RT(cudaDeviceSynchronize());
	DRV(cuMemUnmap(va, vmm_size));
	printf("FREE map 0x%llx\n", (unsigned long long)va);
	DRV(cuMemRelease(handle));
	printf("FREE vmm_physical 0x%llx\n", (unsigned long long)handle);
	DRV(cuMemAddressFree(va, 2 * vmm_size));
	printf("FREE reserve 0x%llx\n", (unsigned long long)va);

	// A deliberate OOM: 1 PiB can never fit.
	void *oom = NULL;
	size_t oom_size = (size_t)1 << 50;
	cudaError_t oom_err = cudaMalloc(&oom, oom_size);
	printf("FAIL device %zu %d %s\n", oom_size, (int)oom_err, cudaGetErrorName(oom_err));
	if (oom_err != cudaErrorMemoryAllocation) {
		printf("ERROR the OOM returned %d, not cudaErrorMemoryAllocation\n", (int)oom_err);
		failures++;
	}
	(void)cudaGetLastError();

	// Frees, in an order unlike the allocations'.
	RT(cudaFree(dev[1]));
	free_line("device", dev[1]);
	RT(cudaFree(pitched));
	free_line("pitch", pitched);
	RT(cudaFree(managed));
	free_line("managed", managed);
	RT(cudaFreeHost(pinned));
	free_line("pinned", pinned);
	RT(cudaFreeHost(host_alloc));
	free_line("pinned", host_alloc);
	RT(cudaFree(dev[0]));
	free_line("device", dev[0]);
	// dev[2] stays live: a leak the trace must report at the end.
	printf("LEAK device %p %zu\n", dev[2], dev_sizes[2]);
	RT(cudaStreamDestroy(stream));
	printf("RESULT failures %d\n", failures);
	return failures ? 1 : 0;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int loop(long n)
{
	void *p;
	RT(cudaFree(0));
	for (int i = 0; i < 1000; i++) { // warm the driver's own structures
		RT(cudaMalloc(&p, 1 << 20));
		RT(cudaFree(p));
	}
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		RT(cudaMalloc(&p, 1 << 20));
		RT(cudaFree(p));
	}
	double t1 = now_ns();
	printf("RESULT pairs %ld ns_per_pair %.1f failures %d\n", n, (t1 - t0) / n, failures);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && strcmp(argv[1], "check") == 0)
		return check();
	if (argc >= 3 && strcmp(argv[1], "loop") == 0)
		return loop(atol(argv[2]));
	fprintf(stderr, "usage: plain check | plain loop N\n");
	return 2;
}
