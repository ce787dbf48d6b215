/* Simulated CUDA runtime: libcudart.so.13 and libcudart_static.a.
 *
 * The real runtime cannot run on a simulated driver (it needs the driver's
 * hidden export tables), so this one reproduces what an interposer sees of
 * it: how it finds the driver and which driver entry points it calls.
 *
 * Start-up, once, on the first API call, in the real runtime's order:
 *   1. dlopen("libcuda.so.1", RTLD_NOW), RTLD_LOCAL;
 *   2. dlsym(h, "cuGetProcAddress_v2"), else dlsym of every name;
 *   3. the probe cuGetProcAddress_v2("", ..., 0, 0, &st) (a stub driver
 *      answers CUDA_ERROR_STUB_LIBRARY);
 *   4. the self-lookup of "cuGetProcAddress" at 11030 and 12000; the pointer
 *      from 12000 makes every later lookup;
 *   5. every driver entry point by base name and version (the stream-ordered
 *      ones twice, flags 0 and flags 2 for the _ptsz forms);
 *   6. cuInit(0), and device 0's primary context made current.
 * Each thread makes its device's primary context current on its first call.
 *
 * Built twice: as a shared library whose cuda* symbols carry the version
 * node libcudart.so.13 (like NVIDIA's), and as a static archive compiled
 * with -fvisibility=hidden, so a library that embeds it (as cuBLAS does)
 * exports no cuda* symbol and needs none: only the dlsym and cuGetProcAddress
 * routes see its allocations. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "sim-cuda.h"

#define MAX_DEVICES	    16
#define ENTRY_POINT_VERSION 13000 /* what cudaGetDriverEntryPoint asks for */

/* ---- the driver entry points, fetched once ---- */
typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t,
			      CUdriverProcAddressQueryResult *);

static struct {
	CUresult (*Init)(unsigned int);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*MemGetInfo)(size_t *, size_t *);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemAllocPitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemAllocManaged)(CUdeviceptr *, size_t, unsigned int);
	CUresult (*MemAllocHost)(void **, size_t);
	CUresult (*MemHostAlloc)(void **, size_t, unsigned int);
	CUresult (*MemFreeHost)(void *);
	CUresult (*MemHostRegister)(void *, size_t, unsigned int);
	CUresult (*MemHostUnregister)(void *);
	CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
	CUresult (*MemAllocAsync_ptsz)(CUdeviceptr *, size_t, CUstream);
	CUresult (*MemAllocFromPoolAsync)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
	CUresult (*MemAllocFromPoolAsync_ptsz)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
	CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
	CUresult (*MemFreeAsync_ptsz)(CUdeviceptr, CUstream);
	CUresult (*MemPoolCreate)(CUmemoryPool *, const CUmemPoolProps *);
	CUresult (*MemPoolDestroy)(CUmemoryPool);
	CUresult (*MemPoolTrimTo)(CUmemoryPool, size_t);
	CUresult (*DeviceGetDefaultMemPool)(CUmemoryPool *, CUdevice);
	CUresult (*MemPoolSetAttribute)(CUmemoryPool, CUmemPool_attribute, void *);
	CUresult (*MemPoolGetAttribute)(CUmemoryPool, CUmemPool_attribute, void *);
	CUresult (*ArrayCreate)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
	CUresult (*Array3DCreate)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
	CUresult (*ArrayDestroy)(CUarray);
	CUresult (*IpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr);
	CUresult (*IpcOpenMemHandle)(CUdeviceptr *, CUipcMemHandle, unsigned int);
	CUresult (*IpcCloseMemHandle)(CUdeviceptr);
} drv;

/* What to fetch: base name, version asked, flags, and the ELF name used when
 * the driver has no cuGetProcAddress_v2 (the dlsym fallback). */
static const struct fetch {
	const char *base;
	int version;
	cuuint64_t flags;
	const char *elf;
	void **slot;
} fetches[] = {
#define F(field, base, version, flags, elf)                                                        \
	{                                                                                          \
#base, version, flags, #elf, (void **)&drv.field                                   \
	}
    F(Init, cuInit, 2000, 0, cuInit),
    F(DriverGetVersion, cuDriverGetVersion, 2020, 0, cuDriverGetVersion),
    F(DeviceGetCount, cuDeviceGetCount, 2000, 0, cuDeviceGetCount),
    F(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000, 0, cuDevicePrimaryCtxRetain),
    F(CtxSetCurrent, cuCtxSetCurrent, 4000, 0, cuCtxSetCurrent),
    F(MemGetInfo, cuMemGetInfo, 3020, 0, cuMemGetInfo_v2),
    F(MemAlloc, cuMemAlloc, 3020, 0, cuMemAlloc_v2),
    F(MemAllocPitch, cuMemAllocPitch, 3020, 0, cuMemAllocPitch_v2),
    F(MemFree, cuMemFree, 3020, 0, cuMemFree_v2),
    F(MemAllocManaged, cuMemAllocManaged, 6000, 0, cuMemAllocManaged),
    F(MemAllocHost, cuMemAllocHost, 3020, 0, cuMemAllocHost_v2),
    F(MemHostAlloc, cuMemHostAlloc, 2020, 0, cuMemHostAlloc),
    F(MemFreeHost, cuMemFreeHost, 2000, 0, cuMemFreeHost),
    F(MemHostRegister, cuMemHostRegister, 6050, 0, cuMemHostRegister_v2),
    F(MemHostUnregister, cuMemHostUnregister, 4000, 0, cuMemHostUnregister),
    F(MemAllocAsync, cuMemAllocAsync, 11020, 0, cuMemAllocAsync),
    F(MemAllocAsync_ptsz, cuMemAllocAsync, 11020, 2, cuMemAllocAsync_ptsz),
    F(MemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, 0, cuMemAllocFromPoolAsync),
    F(MemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020, 2, cuMemAllocFromPoolAsync_ptsz),
    F(MemFreeAsync, cuMemFreeAsync, 11020, 0, cuMemFreeAsync),
    F(MemFreeAsync_ptsz, cuMemFreeAsync, 11020, 2, cuMemFreeAsync_ptsz),
    F(MemPoolCreate, cuMemPoolCreate, 11020, 0, cuMemPoolCreate),
    F(MemPoolDestroy, cuMemPoolDestroy, 11020, 0, cuMemPoolDestroy),
    F(MemPoolTrimTo, cuMemPoolTrimTo, 11020, 0, cuMemPoolTrimTo),
    F(DeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, 11020, 0, cuDeviceGetDefaultMemPool),
    F(MemPoolSetAttribute, cuMemPoolSetAttribute, 11020, 0, cuMemPoolSetAttribute),
    F(MemPoolGetAttribute, cuMemPoolGetAttribute, 11020, 0, cuMemPoolGetAttribute),
    F(ArrayCreate, cuArrayCreate, 3020, 0, cuArrayCreate_v2),
    F(Array3DCreate, cuArray3DCreate, 3020, 0, cuArray3DCreate_v2),
    F(ArrayDestroy, cuArrayDestroy, 2000, 0, cuArrayDestroy),
    F(IpcGetMemHandle, cuIpcGetMemHandle, 4010, 0, cuIpcGetMemHandle),
    F(IpcOpenMemHandle, cuIpcOpenMemHandle, 11000, 0, cuIpcOpenMemHandle_v2),
    F(IpcCloseMemHandle, cuIpcCloseMemHandle, 4010, 0, cuIpcCloseMemHandle),
#undef F
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static cudaError_t init_error = cudaSuccess;
static gpa_v2_fn get_proc; /* the 12000 self-lookup's answer */
static int device_count;
static CUcontext primary[MAX_DEVICES];
static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;

static __thread int tl_device;
static __thread int tl_ready; /* this thread's context is current */
static __thread cudaError_t tl_last_error;

static cudaError_t from_cu(CUresult r)
{
	switch ((int)r) {
	case CUDA_SUCCESS:
		return cudaSuccess;
	case CUDA_ERROR_INVALID_VALUE:
		return cudaErrorInvalidValue;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return cudaErrorMemoryAllocation;
	case CUDA_ERROR_NOT_INITIALIZED:
	case CUDA_ERROR_DEINITIALIZED:
		return cudaErrorInitializationError;
	case CUDA_ERROR_NO_DEVICE:
		return cudaErrorNoDevice;
	case CUDA_ERROR_INVALID_DEVICE:
		return cudaErrorInvalidDevice;
	case CUDA_ERROR_INVALID_CONTEXT:
		return (cudaError_t)201; /* cudaErrorDeviceUninitialized */
	case CUDA_ERROR_INVALID_HANDLE:
		return (cudaError_t)400; /* cudaErrorInvalidResourceHandle */
	case CUDA_ERROR_NOT_FOUND:
		return cudaErrorSymbolNotFound;
	case 712:
		return SIM_cudaErrorHostMemoryAlreadyRegistered;
	case 713:
		return SIM_cudaErrorHostMemoryNotRegistered;
	case CUDA_ERROR_NOT_SUPPORTED:
		return cudaErrorNotSupported;
	default:
		return cudaErrorUnknown;
	}
}

static cudaError_t fail(cudaError_t e)
{
	if (e != cudaSuccess)
		tl_last_error = e;
	return e;
}

static void init_once_fn(void)
{
	init_error = cudaErrorInitializationError;
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h)
		return;
	gpa_v2_fn gpa = (gpa_v2_fn)dlsym(h, "cuGetProcAddress_v2");
	if (gpa) {
		CUdriverProcAddressQueryResult st;
		void *p = NULL;
		if (gpa("", &p, 0, 0, &st) == CUDA_ERROR_STUB_LIBRARY)
			return;
		void *old = NULL;
		gpa("cuGetProcAddress", &old, 11030, 0, &st);
		if (gpa("cuGetProcAddress", &p, 12000, 0, &st) != CUDA_SUCCESS || !p)
			return;
		get_proc = (gpa_v2_fn)p;
		for (size_t i = 0; i < sizeof fetches / sizeof fetches[0]; i++) {
			const struct fetch *f = &fetches[i];
			if (get_proc(f->base, f->slot, f->version, f->flags, &st) != CUDA_SUCCESS)
				*f->slot = NULL;
		}
	} else {
		/* A pre-R525 driver: no cuGetProcAddress_v2, only exact names. */
		for (size_t i = 0; i < sizeof fetches / sizeof fetches[0]; i++)
			*fetches[i].slot = dlsym(h, fetches[i].elf);
	}
	for (size_t i = 0; i < sizeof fetches / sizeof fetches[0]; i++)
		if (!*fetches[i].slot)
			return;
	CUresult r = drv.Init(0);
	if (r != CUDA_SUCCESS) {
		init_error = r == CUDA_ERROR_NO_DEVICE ? cudaErrorNoDevice : from_cu(r);
		return;
	}
	if (drv.DeviceGetCount(&device_count) != CUDA_SUCCESS || device_count <= 0) {
		init_error = cudaErrorNoDevice;
		return;
	}
	if (device_count > MAX_DEVICES)
		device_count = MAX_DEVICES;
	init_error = cudaSuccess;
}

static CUcontext primary_of(int dev)
{
	pthread_mutex_lock(&primary_lock);
	if (!primary[dev] && drv.DevicePrimaryCtxRetain(&primary[dev], dev) != CUDA_SUCCESS)
		primary[dev] = NULL;
	CUcontext c = primary[dev];
	pthread_mutex_unlock(&primary_lock);
	return c;
}

/* Initialises the runtime and this thread's context; every API call's first
 * step. */
static cudaError_t ready(void)
{
	pthread_once(&init_once, init_once_fn);
	if (init_error != cudaSuccess)
		return init_error;
	if (tl_ready)
		return cudaSuccess;
	CUcontext c = primary_of(tl_device);
	if (!c || drv.CtxSetCurrent(c) != CUDA_SUCCESS)
		return cudaErrorInitializationError;
	tl_ready = 1;
	return cudaSuccess;
}

#define READY()                                                                                    \
	do {                                                                                       \
		cudaError_t ready_ = ready();                                                      \
		if (ready_ != cudaSuccess)                                                         \
			return fail(ready_);                                                       \
	} while (0)

static cudaError_t ret(CUresult r)
{
	return fail(from_cu(r));
}

/* ---- devices and errors ---- */
cudaError_t cudaGetDeviceCount(int *count)
{
	READY();
	if (!count)
		return fail(cudaErrorInvalidValue);
	*count = device_count;
	return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
	pthread_once(&init_once, init_once_fn);
	if (init_error != cudaSuccess)
		return fail(init_error);
	if (device < 0 || device >= device_count)
		return fail(cudaErrorInvalidDevice);
	CUcontext c = primary_of(device);
	if (!c || drv.CtxSetCurrent(c) != CUDA_SUCCESS)
		return fail(cudaErrorInitializationError);
	tl_device = device;
	tl_ready = 1;
	return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
	READY();
	if (!device)
		return fail(cudaErrorInvalidValue);
	*device = tl_device;
	return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
	READY(); /* the simulated driver completes all work at once */
	return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *driverVersion)
{
	READY();
	if (!driverVersion)
		return fail(cudaErrorInvalidValue);
	return ret(drv.DriverGetVersion(driverVersion));
}

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = tl_last_error;
	tl_last_error = cudaSuccess;
	return e;
}

cudaError_t cudaPeekAtLastError(void)
{
	return tl_last_error;
}

const char *cudaGetErrorString(cudaError_t error)
{
	switch ((int)error) {
	case cudaSuccess:
		return "no error";
	case cudaErrorInvalidValue:
		return "invalid argument";
	case cudaErrorMemoryAllocation:
		return "out of memory";
	case cudaErrorInitializationError:
		return "initialization error";
	case cudaErrorNoDevice:
		return "no CUDA-capable device is detected";
	case cudaErrorInvalidDevice:
		return "invalid device ordinal";
	case 201:
		return "invalid device context";
	case 400:
		return "invalid resource handle";
	case cudaErrorSymbolNotFound:
		return "named symbol not found";
	case 712:
		return "part or all of the requested memory range is already mapped";
	case 713:
		return "pointer does not correspond to a registered memory region";
	case cudaErrorNotSupported:
		return "operation not supported";
	default:
		return "unrecognized error code";
	}
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
	READY();
	return ret(drv.MemGetInfo(free_bytes, total));
}

/* ---- linear device memory ---- */
cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	READY();
	if (!devPtr)
		return fail(cudaErrorInvalidValue);
	if (size == 0) { /* like the real runtime: success, NULL, no driver call */
		*devPtr = NULL;
		return cudaSuccess;
	}
	CUdeviceptr p;
	CUresult r = drv.MemAlloc(&p, size);
	if (r == CUDA_SUCCESS)
		*devPtr = (void *)(uintptr_t)p;
	return ret(r);
}

/* The element size only bounds the pitch's alignment; 16 is the largest. */
cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	READY();
	if (!devPtr || !pitch)
		return fail(cudaErrorInvalidValue);
	CUdeviceptr p;
	CUresult r = drv.MemAllocPitch(&p, pitch, width, height, 16);
	if (r == CUDA_SUCCESS)
		*devPtr = (void *)(uintptr_t)p;
	return ret(r);
}

cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
	READY();
	if (!pitchedDevPtr)
		return fail(cudaErrorInvalidValue);
	CUdeviceptr p;
	size_t pitch;
	CUresult r = drv.MemAllocPitch(&p, &pitch, extent.width, extent.height * extent.depth, 16);
	if (r == CUDA_SUCCESS)
		*pitchedDevPtr = (struct cudaPitchedPtr){(void *)(uintptr_t)p, pitch, extent.width,
							 extent.height};
	return ret(r);
}

cudaError_t cudaFree(void *devPtr)
{
	READY();
	if (!devPtr)
		return cudaSuccess; /* cudaFree(0) only initialises */
	return ret(drv.MemFree((uintptr_t)devPtr));
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	READY();
	if (!devPtr || !size)
		return fail(cudaErrorInvalidValue);
	CUdeviceptr p;
	CUresult r = drv.MemAllocManaged(&p, size, flags);
	if (r == CUDA_SUCCESS)
		*devPtr = (void *)(uintptr_t)p;
	return ret(r);
}

/* ---- pinned host memory ---- */
cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	READY();
	return ret(drv.MemAllocHost(ptr, size));
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	READY();
	return ret(drv.MemHostAlloc(pHost, size, flags));
}

cudaError_t cudaFreeHost(void *ptr)
{
	READY();
	if (!ptr)
		return cudaSuccess;
	return ret(drv.MemFreeHost(ptr));
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	READY();
	return ret(drv.MemHostRegister(ptr, size, flags));
}

cudaError_t cudaHostUnregister(void *ptr)
{
	READY();
	return ret(drv.MemHostUnregister(ptr));
}

/* ---- stream-ordered memory: the _ptsz forms use the flags-2 pointers ---- */
static cudaError_t alloc_async(CUresult (*fn)(CUdeviceptr *, size_t, CUstream), void **devPtr,
			       size_t size, cudaStream_t stream)
{
	READY();
	if (!devPtr)
		return fail(cudaErrorInvalidValue);
	CUdeviceptr p;
	CUresult r = fn(&p, size, stream);
	if (r == CUDA_SUCCESS)
		*devPtr = (void *)(uintptr_t)p;
	return ret(r);
}

static cudaError_t alloc_pool(CUresult (*fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream),
			      void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream)
{
	READY();
	if (!ptr)
		return fail(cudaErrorInvalidValue);
	CUdeviceptr p;
	CUresult r = fn(&p, size, pool, stream);
	if (r == CUDA_SUCCESS)
		*ptr = (void *)(uintptr_t)p;
	return ret(r);
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	return alloc_async(drv.MemAllocAsync, devPtr, size, hStream);
}

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
	return alloc_async(drv.MemAllocAsync_ptsz, devPtr, size, hStream);
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
				    cudaStream_t stream)
{
	return alloc_pool(drv.MemAllocFromPoolAsync, ptr, size, memPool, stream);
}

cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
					 cudaStream_t stream)
{
	return alloc_pool(drv.MemAllocFromPoolAsync_ptsz, ptr, size, memPool, stream);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	READY();
	return ret(drv.MemFreeAsync((uintptr_t)devPtr, hStream));
}

cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
	READY();
	return ret(drv.MemFreeAsync_ptsz((uintptr_t)devPtr, hStream));
}

/* struct cudaMemPoolProps and CUmemPoolProps share one layout (checked by
 * tests/cuda-decls), as in the toolkit. */
cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
	READY();
	return ret(drv.MemPoolCreate(memPool, (const CUmemPoolProps *)poolProps));
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
	READY();
	return ret(drv.MemPoolDestroy(memPool));
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
	READY();
	return ret(drv.MemPoolTrimTo(memPool, minBytesToKeep));
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
	READY();
	return ret(drv.DeviceGetDefaultMemPool(memPool, device));
}

/* enum cudaMemPoolAttr and CUmemPool_attribute share their values. */
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
	READY();
	return ret(drv.MemPoolSetAttribute(memPool, (CUmemPool_attribute)attr, value));
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
	READY();
	return ret(drv.MemPoolGetAttribute(memPool, (CUmemPool_attribute)attr, value));
}

/* ---- arrays ---- */
static int array_format(const struct cudaChannelFormatDesc *d, CUarray_format *fmt,
			unsigned *channels)
{
	int bits = d->x;
	unsigned n = (d->x > 0) + (d->y > 0) + (d->z > 0) + (d->w > 0);
	if ((d->y && d->y != bits) || (d->z && d->z != bits) || (d->w && d->w != bits))
		return -1;
	switch (d->f) {
	case cudaChannelFormatKindSigned:
		*fmt = bits == 8    ? CU_AD_FORMAT_SIGNED_INT8
		       : bits == 16 ? CU_AD_FORMAT_SIGNED_INT16
				    : CU_AD_FORMAT_SIGNED_INT32;
		break;
	case cudaChannelFormatKindUnsigned:
		*fmt = bits == 8    ? CU_AD_FORMAT_UNSIGNED_INT8
		       : bits == 16 ? CU_AD_FORMAT_UNSIGNED_INT16
				    : CU_AD_FORMAT_UNSIGNED_INT32;
		break;
	case cudaChannelFormatKindFloat:
		*fmt = bits == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
		break;
	default:
		return -1;
	}
	if ((bits != 8 && bits != 16 && bits != 32) ||
	    (d->f == cudaChannelFormatKindFloat && bits == 8))
		return -1;
	*channels = n;
	return 0;
}

cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
			    size_t width, size_t height, unsigned int flags)
{
	READY();
	CUDA_ARRAY_DESCRIPTOR d = {width, height, 0, 0};
	if (!array || !desc || array_format(desc, &d.Format, &d.NumChannels))
		return fail(cudaErrorInvalidValue);
	CUarray a;
	CUresult r = drv.ArrayCreate(&a, &d);
	if (r == CUDA_SUCCESS)
		*array = (cudaArray_t)a;
	return ret(r);
}

cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
			      struct cudaExtent extent, unsigned int flags)
{
	READY();
	CUDA_ARRAY3D_DESCRIPTOR d = {extent.width, extent.height, extent.depth, 0, 0, flags};
	if (!array || !desc || array_format(desc, &d.Format, &d.NumChannels))
		return fail(cudaErrorInvalidValue);
	CUarray a;
	CUresult r = drv.Array3DCreate(&a, &d);
	if (r == CUDA_SUCCESS)
		*array = (cudaArray_t)a;
	return ret(r);
}

cudaError_t cudaFreeArray(cudaArray_t array)
{
	READY();
	if (!array)
		return cudaSuccess;
	return ret(drv.ArrayDestroy((CUarray)array));
}

/* ---- IPC: the two handle types share one 64-byte layout ---- */
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
	READY();
	return ret(drv.IpcGetMemHandle((CUipcMemHandle *)handle, (uintptr_t)devPtr));
}

cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags)
{
	READY();
	if (!devPtr)
		return fail(cudaErrorInvalidValue);
	CUipcMemHandle h;
	memcpy(&h, &handle, sizeof h);
	CUdeviceptr p;
	CUresult r = drv.IpcOpenMemHandle(&p, h, flags);
	if (r == CUDA_SUCCESS)
		*devPtr = (void *)(uintptr_t)p;
	return ret(r);
}

cudaError_t cudaIpcCloseMemHandle(void *devPtr)
{
	READY();
	return ret(drv.IpcCloseMemHandle((uintptr_t)devPtr));
}

/* ---- driver entry points, through the runtime's own cuGetProcAddress ---- */
static cudaError_t entry_point(const char *symbol, void **funcPtr, unsigned int version,
			       unsigned long long flags,
			       enum cudaDriverEntryPointQueryResult *driverStatus)
{
	READY();
	if (!symbol || !funcPtr)
		return fail(cudaErrorInvalidValue);
	if (!get_proc) /* the dlsym fallback found no cuGetProcAddress_v2 */
		return fail(cudaErrorNotSupported);
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	CUresult r = get_proc(symbol, funcPtr, (int)version, flags, &st);
	if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_FOUND)
		return ret(r);
	/* A symbol not found is reported in driverStatus, not as an error. */
	if (driverStatus)
		*driverStatus = st == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess
				: st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
				    ? cudaDriverEntryPointVersionNotSufficent
				    : cudaDriverEntryPointSymbolNotFound;
	return cudaSuccess;
}

/* The _ptsz forms are what code compiled with per-thread default streams
 * calls: "default" then means per-thread. */
static unsigned long long ptsz_flags(unsigned long long flags)
{
	if (!(flags & (cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream)))
		flags |= cudaEnablePerThreadDefaultStream;
	return flags;
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
				    enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point(symbol, funcPtr, ENTRY_POINT_VERSION, flags, driverStatus);
}

cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
					 unsigned long long flags,
					 enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point(symbol, funcPtr, ENTRY_POINT_VERSION, ptsz_flags(flags), driverStatus);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
					     unsigned int cudaVersion, unsigned long long flags,
					     enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus);
}

cudaError_t
cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
				      unsigned long long flags,
				      enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point(symbol, funcPtr, cudaVersion, ptsz_flags(flags), driverStatus);
}
