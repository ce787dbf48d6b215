/* Every family of runtime allocation calls, linked against libcudart.so.13.
 *
 * usage: runtime-basic [family...]   (none: all, in this order)
 *   malloc pitch 3d managed host register async pool array ipc errors
 *
 * What each family calls (the integration tests count exactly this):
 *   malloc    cudaMalloc 1 MiB, 3000 B, 5 MiB; cudaFree x3
 *   pitch     cudaMallocPitch 1000 x 100 (pitch 1024: 102400 B); cudaFree
 *   3d        cudaMalloc3D 300 x 20 x 30 (pitch 512: 307200 B); cudaFree
 *   managed   cudaMallocManaged 10000 B global, 4096 B host; cudaFree x2
 *   host      cudaMallocHost 8192; cudaHostAlloc 12288; cudaFreeHost x2
 *   register  cudaHostRegister 65536; cudaHostUnregister
 *   async     cudaMallocAsync 2 MiB, 1000 B; cudaMallocAsync_ptsz 4 MiB;
 *             cudaFreeAsync x2; cudaFreeAsync_ptsz x1
 *   pool      cudaMemPoolCreate; cudaMallocFromPoolAsync 1 MiB;
 *             cudaMallocFromPoolAsync_ptsz 3 MiB; cudaFreeAsync;
 *             cudaFreeAsync_ptsz; cudaMemPoolTrimTo; cudaMemPoolDestroy
 *   array     cudaMallocArray 256 x 128 float (131072 B);
 *             cudaMalloc3DArray 64 x 32 x 8 uchar4 (65536 B); cudaFreeArray x2
 *   ipc       cudaMalloc 2 MiB; cudaIpcGetMemHandle; cudaIpcOpenMemHandle;
 *             cudaIpcCloseMemHandle; cudaFree
 *   errors    failing calls only: cudaFree, cudaFreeHost, cudaHostUnregister
 *             of unknown pointers; cudaHostRegister twice (second fails)
 *   multi     with 2+ devices (SIMCUDA_DEVICES=2; otherwise no calls):
 *             cudaMalloc 1 MiB on device 0; cudaSetDevice(1); cudaMalloc
 *             3 MiB and cudaMallocAsync 2 MiB on device 1; cudaFree,
 *             cudaFreeAsync; cudaSetDevice(0); cudaFree */
#include <stdint.h>

#include "progs.h"

static void fam_malloc(void)
{
	void *a, *b, *c;
	CHECK(cudaMalloc(&a, 1 * MiB), cudaSuccess);
	CHECK(cudaMalloc(&b, 3000), cudaSuccess);
	CHECK(cudaMalloc(&c, 5 * MiB), cudaSuccess);
	EXPECT((uintptr_t)a % 512 == 0 && (uintptr_t)b % 512 == 0);
	EXPECT((uintptr_t)c % (2 * MiB) == 0);
	EXPECT(a != b && b != c && a != c);
	CHECK(cudaFree(b), cudaSuccess);
	CHECK(cudaFree(a), cudaSuccess);
	CHECK(cudaFree(c), cudaSuccess);
}

static void fam_pitch(void)
{
	void *p;
	size_t pitch = 0;
	CHECK(cudaMallocPitch(&p, &pitch, 1000, 100), cudaSuccess);
	printf("pitch = %zu\n", pitch);
	CHECK(cudaFree(p), cudaSuccess);
}

static void fam_3d(void)
{
	struct cudaPitchedPtr pp;
	CHECK(cudaMalloc3D(&pp, (struct cudaExtent){300, 20, 30}), cudaSuccess);
	printf("pitch = %zu, xsize = %zu, ysize = %zu\n", pp.pitch, pp.xsize, pp.ysize);
	CHECK(cudaFree(pp.ptr), cudaSuccess);
}

static void fam_managed(void)
{
	unsigned char *m, *n;
	CHECK(cudaMallocManaged((void **)&m, 10000, cudaMemAttachGlobal), cudaSuccess);
	CHECK(cudaMallocManaged((void **)&n, 4096, cudaMemAttachHost), cudaSuccess);
	memset(m, 0xab, 10000); /* managed memory is usable from the host */
	n[4095] = 7;
	EXPECT(m[9999] == 0xab && n[4095] == 7);
	CHECK(cudaFree(m), cudaSuccess);
	CHECK(cudaFree(n), cudaSuccess);
}

static void fam_host(void)
{
	char *h1, *h2;
	CHECK(cudaMallocHost((void **)&h1, 8192), cudaSuccess);
	CHECK(cudaHostAlloc((void **)&h2, 12288, cudaHostAllocPortable | cudaHostAllocMapped),
	      cudaSuccess);
	memset(h1, 1, 8192);
	memset(h2, 2, 12288);
	EXPECT(h1[8191] == 1 && h2[12287] == 2);
	CHECK(cudaFreeHost(h1), cudaSuccess);
	CHECK(cudaFreeHost(h2), cudaSuccess);
}

static void fam_register(void)
{
	void *buf = aligned_alloc(4096, 65536);
	CHECK(cudaHostRegister(buf, 65536, cudaHostRegisterDefault), cudaSuccess);
	CHECK(cudaHostUnregister(buf), cudaSuccess);
	free(buf);
}

static void fam_async(void)
{
	void *a, *b, *c;
	CHECK(cudaMallocAsync(&a, 2 * MiB, 0), cudaSuccess);
	CHECK(cudaMallocAsync_ptsz(&b, 4 * MiB, 0), cudaSuccess);
	CHECK(cudaMallocAsync(&c, 1000, cudaStreamPerThread), cudaSuccess);
	CHECK(cudaFreeAsync(a, 0), cudaSuccess);
	CHECK(cudaFreeAsync_ptsz(b, 0), cudaSuccess);
	CHECK(cudaFreeAsync(c, cudaStreamPerThread), cudaSuccess);
	CHECK(cudaDeviceSynchronize(), cudaSuccess);
}

static void fam_pool(void)
{
	struct cudaMemPoolProps props = {0};
	props.allocType = cudaMemAllocationTypePinned;
	props.location = (struct cudaMemLocation){cudaMemLocationTypeDevice, 0};
	cudaMemPool_t pool;
	void *c, *d;
	CHECK(cudaMemPoolCreate(&pool, &props), cudaSuccess);
	CHECK(cudaMallocFromPoolAsync(&c, 1 * MiB, pool, 0), cudaSuccess);
	CHECK(cudaMallocFromPoolAsync_ptsz(&d, 3 * MiB, pool, 0), cudaSuccess);
	CHECK(cudaFreeAsync(c, 0), cudaSuccess);
	CHECK(cudaFreeAsync_ptsz(d, 0), cudaSuccess);
	CHECK(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
	CHECK(cudaMemPoolDestroy(pool), cudaSuccess);
}

static void fam_array(void)
{
	struct cudaChannelFormatDesc f1 = {32, 0, 0, 0, cudaChannelFormatKindFloat};
	struct cudaChannelFormatDesc u4 = {8, 8, 8, 8, cudaChannelFormatKindUnsigned};
	cudaArray_t a, b;
	CHECK(cudaMallocArray(&a, &f1, 256, 128, 0), cudaSuccess);
	CHECK(cudaMalloc3DArray(&b, &u4, (struct cudaExtent){64, 32, 8}, 0), cudaSuccess);
	CHECK(cudaFreeArray(a), cudaSuccess);
	CHECK(cudaFreeArray(b), cudaSuccess);
}

static void fam_ipc(void)
{
	void *d, *o;
	cudaIpcMemHandle_t h;
	CHECK(cudaMalloc(&d, 2 * MiB), cudaSuccess);
	CHECK(cudaIpcGetMemHandle(&h, d), cudaSuccess);
	CHECK(cudaIpcOpenMemHandle(&o, h, cudaIpcMemLazyEnablePeerAccess), cudaSuccess);
	EXPECT(o != d);
	CHECK(cudaIpcCloseMemHandle(o), cudaSuccess);
	CHECK(cudaFree(d), cudaSuccess);
}

static void fam_errors(void)
{
	int local;
	void *buf = aligned_alloc(4096, 8192);
	CHECK(cudaFree(&local), cudaErrorInvalidValue);
	CHECK(cudaFreeHost(&local), cudaErrorInvalidValue);
	CHECK(cudaHostUnregister(&local), SIM_cudaErrorHostMemoryNotRegistered);
	CHECK(cudaHostRegister(buf, 8192, 0), cudaSuccess);
	CHECK(cudaHostRegister(buf, 4096, 0), SIM_cudaErrorHostMemoryAlreadyRegistered);
	CHECK(cudaGetLastError(), SIM_cudaErrorHostMemoryAlreadyRegistered);
	CHECK(cudaGetLastError(), cudaSuccess);
	CHECK(cudaHostUnregister(buf), cudaSuccess);
	free(buf);
}

static void fam_multi(void)
{
	int n = 0, dev = -1;
	CHECK(cudaGetDeviceCount(&n), cudaSuccess);
	if (n < 2) {
		printf("one device: nothing to do\n");
		return;
	}
	void *a, *b, *c;
	CHECK(cudaMalloc(&a, 1 * MiB), cudaSuccess);
	CHECK(cudaSetDevice(1), cudaSuccess);
	CHECK(cudaGetDevice(&dev), cudaSuccess);
	printf("device = %d\n", dev);
	CHECK(cudaMalloc(&b, 3 * MiB), cudaSuccess);
	CHECK(cudaMallocAsync(&c, 2 * MiB, 0), cudaSuccess);
	EXPECT(a != b && b != c);
	CHECK(cudaFree(b), cudaSuccess);
	CHECK(cudaFreeAsync(c, 0), cudaSuccess);
	CHECK(cudaSetDevice(0), cudaSuccess);
	CHECK(cudaFree(a), cudaSuccess);
	CHECK(cudaSetDevice(n), cudaErrorInvalidDevice);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} families[] = {
	    {"malloc", fam_malloc},   {"pitch", fam_pitch},   {"3d", fam_3d},
	    {"managed", fam_managed}, {"host", fam_host},     {"register", fam_register},
	    {"async", fam_async},     {"pool", fam_pool},     {"array", fam_array},
	    {"ipc", fam_ipc},	      {"errors", fam_errors}, {"multi", fam_multi},
	    {"init-free", NULL},
	};
	const char *names[sizeof families / sizeof families[0]];
	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
		names[i] = families[i].name;
	check_families(argc, argv, names, sizeof families / sizeof families[0]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Programs often begin with cudaFree(0): the runtime then initialises,
	 * and retains the context, inside the first traced call. */
	int init_free = 0; /* only when named: "all" keeps its old calls */
	for (int i = 1; i < argc; i++)
		init_free |= !strcmp(argv[i], "init-free");
	if (init_free)
		CHECK(cudaFree(NULL), cudaSuccess);
	int n = 0;
	CHECK(cudaGetDeviceCount(&n), cudaSuccess);
	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
		if (families[i].fn && wanted(argc, argv, families[i].name)) {
			printf("-- %s\n", families[i].name);
			families[i].fn();
		}
	return prog_exit("runtime-basic");
}
