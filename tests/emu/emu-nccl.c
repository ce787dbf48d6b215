/* NCCL at the driver level (frameworks.md §4): one rank's communicator
 * init, its first all-reduce, a loop of all-reduces, and the destroy.
 *
 * Route (§0.2): cudart linked statically (CUDARTLIB ?= cudart_static), the
 * cuMem* entry points from cudaGetDriverEntryPoint (cudawrap.cc). So no
 * libcudart.so export sees its calls.
 *
 * ncclCuMemAlloc (§4, alloc.h): granularity (MINIMUM), the size aligned up
 * to it, cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess.
 * ncclCuMemFree: cuMemRetainAllocationHandle, cuMemRelease (the extra
 * reference), cuMemUnmap, cuMemRelease (the creation's), cuMemAddressFree.
 * [cuMemGetAddressRange, between the two, is not in the simulated driver.]
 * Init allocates small device structs, each at least one granule; the
 * transport buffers (10 MiB per P2P receive connection, CUDA_IPC_MIN 2 MiB
 * rounding) come at the first collective, on the proxy thread (§4,
 * runtimeConn). ncclMemAlloc (user buffers, src/allocator.cc) tries a
 * FABRIC handle first and falls back on NOT_SUPPORTED. */
#include "emu.h"

#define MAX_BUFS  1024
#define CHANNELS  4
#define RECV_CONN (10 * MiB)

static CUresult (*gran)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
static CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
			  unsigned long long);
static CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
static CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
		       unsigned long long);
static CUresult (*access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
static CUresult (*retain)(CUmemGenericAllocationHandle *, void *);
static CUresult (*release)(CUmemGenericAllocationHandle);
static CUresult (*unmap)(CUdeviceptr, size_t);
static CUresult (*addr_free)(CUdeviceptr, size_t);

struct buf {
	CUdeviceptr ptr;
	size_t size;
};
static struct {
	struct buf b[MAX_BUFS];
	int n;
	size_t bytes;
	int failed;
} N;
static pthread_mutex_t n_lock = PTHREAD_MUTEX_INITIALIZER;

static int cu_mem_alloc(size_t size, unsigned handle_types)
{
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
				    .requestedHandleTypes = handle_types,
				    .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
	prop.allocFlags.gpuDirectRDMACapable = 1;
	size_t g = 0;
	gran(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	size = emu_round_up(size, g ? g : 2 * MiB);
	CUmemGenericAllocationHandle h;
	CUresult r = create(&h, size, &prop, 0);
	if (r != CUDA_SUCCESS)
		return (int)r;
	CUdeviceptr p;
	reserve(&p, size, g, 0, 0);
	map(p, size, 0, h, 0);
	CUmemAccessDesc desc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0},
				CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	access(p, size, &desc, 1);
	pthread_mutex_lock(&n_lock);
	if (N.n < MAX_BUFS)
		N.b[N.n++] = (struct buf){p, size};
	N.bytes += size;
	pthread_mutex_unlock(&n_lock);
	return 0;
}

static int nccl_cuda_calloc(size_t size)
{
	int r = cu_mem_alloc(size, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (r) {
		printf("EMU NCCL WARN Cuda failure %d 'out of memory' (ncclCuMemAlloc of %zu)\n", r,
		       size);
		N.failed = 1;
	}
	return r;
}

/* The double release: retain adds a reference, the first release drops
 * it, the second drops the creation's. */
static void cu_mem_free(struct buf *b)
{
	CUmemGenericAllocationHandle h;
	retain(&h, (void *)b->ptr);
	release(h);
	unmap(b->ptr, b->size);
	release(h);
	addr_free(b->ptr, b->size);
	N.bytes -= b->size;
}

static void setup(void)
{
	enum cudaDriverEntryPointQueryResult q;
	cudaFree(NULL);
#define PFN(var, name) cudaGetDriverEntryPoint(name, (void **)&var, 0, &q)
	PFN(gran, "cuMemGetAllocationGranularity");
	PFN(create, "cuMemCreate");
	PFN(reserve, "cuMemAddressReserve");
	PFN(map, "cuMemMap");
	PFN(access, "cuMemSetAccess");
	PFN(retain, "cuMemRetainAllocationHandle");
	PFN(release, "cuMemRelease");
	PFN(unmap, "cuMemUnmap");
	PFN(addr_free, "cuMemAddressFree");
#undef PFN
	if (!create || !retain || !release) {
		fprintf(stderr, "emu-nccl: no cuMem entry points\n");
		exit(3);
	}
}

/* ncclCommInitRank: devComm and channels, per-rank arrays, per-channel
 * peer arrays: small structs, a granule each. */
static int comm_init(void)
{
	static const size_t structs[] = {4096, 65536, 1024, 8192, 512, 2048};
	for (size_t i = 0; i < sizeof structs / sizeof *structs; i++)
		if (nccl_cuda_calloc(structs[i]))
			return -1;
	for (int c = 0; c < CHANNELS; c++)
		if (nccl_cuda_calloc(1024))
			return -1;
	return 0;
}

/* The proxy thread's transport setup at the first collective. */
static void *proxy_setup(void *arg)
{
	(void)arg;
	cudaSetDevice(0);
	for (int c = 0; c < CHANNELS * 2 && !N.failed; c++)
		nccl_cuda_calloc(RECV_CONN);
	return NULL;
}

static struct emu_kernel k_allreduce = {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", 40 * MiB, NULL};

static int first_collective(void)
{
	pthread_t t;
	pthread_create(&t, NULL, proxy_setup, NULL);
	pthread_setname_np(t, "NCCL Proxy");
	pthread_join(t, NULL);
	return N.failed ? -1 : 0;
}

static void all_reduces(int n)
{
	for (int i = 0; i < n; i++) {
		emu_launch(&k_allreduce);
		emu_sleep_ms(i < 2 ? 20 : 1);
	}
}

static int finish(int rc)
{
	printf("EMU nccl: %d buffers live, %zu bytes\n", N.n, N.bytes);
	return rc;
}

static void comm_destroy(void)
{
	for (int i = 0; i < N.n; i++)
		cu_mem_free(&N.b[i]);
	N.n = 0;
}

static int clean(void)
{
	setup();
	if (comm_init() || first_collective())
		return finish(1);
	all_reduces(150);
	comm_destroy();
	return finish(0);
}

/* §4 (b): a communicator made every 20 steps (new_group) and never
 * destroyed: a staircase of init + transport bursts. */
static int leak(void)
{
	setup();
	for (int g = 0; g < 8; g++) {
		if (comm_init() || first_collective())
			return finish(1);
		all_reduces(20);
	}
	return finish(0);
}

/* The transport buffers do not fit a 256 MiB device beside a model's
 * 180 MiB (a cudaMalloc of the program's own). */
static int oom(void)
{
	void *model;
	setup();
	cudaMalloc(&model, 180 * MiB);
	if (comm_init() || first_collective())
		return finish(1);
	all_reduces(20);
	return finish(0);
}

/* ncclMemAlloc: FABRIC first; NOT_SUPPORTED is not an OOM, and the
 * fallback succeeds. */
static int fabric_fallback(void)
{
	setup();
	if (comm_init() || first_collective())
		return finish(1);
	if (cu_mem_alloc(64 * MiB,
			 CU_MEM_HANDLE_TYPE_FABRIC | CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) &&
	    nccl_cuda_calloc(64 * MiB))
		return finish(1);
	all_reduces(100);
	comm_destroy();
	return finish(0);
}

int main(int argc, char **argv)
{
	static const struct emu_scenario s[] = {
	    {"clean", clean, "init, first all-reduce, 150 all-reduces, destroy"},
	    {"leak", leak, "8 communicators, none destroyed"},
	    {"oom", oom, "the transport buffers do not fit (256 MiB device)"},
	    {"fabric-fallback", fabric_fallback, "ncclMemAlloc: FABRIC refused, then plain"},
	};
	return emu_main(argc, argv, s, sizeof s / sizeof *s);
}
