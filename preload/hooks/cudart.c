/* Runtime API wrappers (libcudart.so.*). A runtime call is one event named
 * after itself: the driver calls it makes inside run under the guard. */
#include "preload/hooks/forward.h"

#define MISSING GMT_RUNTIME_MISSING
#define HOST	(-1)

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	GMT_FORWARD(cudaMalloc, MISSING, devPtr, size);
	gmt_hook_record(GMT_API_cudaMalloc, r_, GMT_DEVICE_CURRENT, GMT_OUT(devPtr), size, 0, 0, 0);
	return r_;
}

cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	GMT_FORWARD(cudaMallocPitch, MISSING, devPtr, pitch, width, height);
	size_t p = r_ == cudaSuccess && pitch ? *pitch : width;
	gmt_hook_record(GMT_API_cudaMallocPitch, r_, GMT_DEVICE_CURRENT, GMT_OUT(devPtr),
			p * height, p, width, GMT_AUX2);
	return r_;
}

cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
	GMT_FORWARD(cudaMalloc3D, MISSING, pitchedDevPtr, extent);
	int ok = r_ == cudaSuccess && pitchedDevPtr;
	size_t pitch = ok ? pitchedDevPtr->pitch : extent.width;
	gmt_hook_record(GMT_API_cudaMalloc3D, r_, GMT_DEVICE_CURRENT,
			ok ? GMT_U(pitchedDevPtr->ptr) : 0, pitch * extent.height * extent.depth,
			pitch, extent.width, GMT_AUX2);
	return r_;
}

cudaError_t cudaFree(void *devPtr)
{
	GMT_FORWARD_FREE(cudaFree, MISSING, devPtr);
	gmt_hook_record(GMT_API_cudaFree, r_, GMT_DEVICE_CURRENT, GMT_U(devPtr), 0, 0, 0, 0);
	return r_;
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	GMT_FORWARD(cudaMallocManaged, MISSING, devPtr, size, flags);
	gmt_hook_record(GMT_API_cudaMallocManaged, r_, GMT_DEVICE_CURRENT, GMT_OUT(devPtr), size,
			flags, 0, GMT_AUX);
	return r_;
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	GMT_FORWARD(cudaMallocHost, MISSING, ptr, size);
	gmt_hook_record(GMT_API_cudaMallocHost, r_, HOST, GMT_OUT(ptr), size, 0, 0, 0);
	return r_;
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	GMT_FORWARD(cudaHostAlloc, MISSING, pHost, size, flags);
	gmt_hook_record(GMT_API_cudaHostAlloc, r_, HOST, GMT_OUT(pHost), size, flags, 0, GMT_AUX);
	return r_;
}

cudaError_t cudaFreeHost(void *ptr)
{
	GMT_FORWARD_FREE(cudaFreeHost, MISSING, ptr);
	gmt_hook_record(GMT_API_cudaFreeHost, r_, HOST, GMT_U(ptr), 0, 0, 0, 0);
	return r_;
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	GMT_FORWARD(cudaHostRegister, MISSING, ptr, size, flags);
	gmt_hook_record(GMT_API_cudaHostRegister, r_, HOST, GMT_U(ptr), size, flags, 0, GMT_AUX);
	return r_;
}

cudaError_t cudaHostUnregister(void *ptr)
{
	GMT_FORWARD_FREE(cudaHostUnregister, MISSING, ptr);
	gmt_hook_record(GMT_API_cudaHostUnregister, r_, HOST, GMT_U(ptr), 0, 0, 0, 0);
	return r_;
}

#define MALLOC_ASYNC(name)                                                                         \
	cudaError_t name(void **devPtr, size_t size, cudaStream_t hStream)                         \
	{                                                                                          \
		GMT_FORWARD(name, MISSING, devPtr, size, hStream);                                 \
		gmt_hook_record(GMT_API_##name, r_, GMT_DEVICE_CURRENT, GMT_OUT(devPtr), size,     \
				GMT_U(hStream), 0, GMT_AUX);                                       \
		return r_;                                                                         \
	}
MALLOC_ASYNC(cudaMallocAsync)
MALLOC_ASYNC(cudaMallocAsync_ptsz)

#define MALLOC_FROM_POOL(name)                                                                     \
	cudaError_t name(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)      \
	{                                                                                          \
		GMT_FORWARD(name, MISSING, ptr, size, memPool, stream);                            \
		gmt_hook_record(GMT_API_##name, r_, GMT_DEVICE_CURRENT, GMT_OUT(ptr), size,        \
				GMT_U(stream), GMT_U(memPool), GMT_AUX2);                          \
		return r_;                                                                         \
	}
MALLOC_FROM_POOL(cudaMallocFromPoolAsync)
MALLOC_FROM_POOL(cudaMallocFromPoolAsync_ptsz)

#define FREE_ASYNC(name)                                                                           \
	cudaError_t name(void *devPtr, cudaStream_t hStream)                                       \
	{                                                                                          \
		GMT_FORWARD_FREE(name, MISSING, devPtr, hStream);                                  \
		gmt_hook_record(GMT_API_##name, r_, GMT_DEVICE_CURRENT, GMT_U(devPtr), 0,          \
				GMT_U(hStream), 0, GMT_AUX);                                       \
		return r_;                                                                         \
	}
FREE_ASYNC(cudaFreeAsync)
FREE_ASYNC(cudaFreeAsync_ptsz)

cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
	GMT_FORWARD(cudaMemPoolCreate, MISSING, memPool, poolProps);
	gmt_hook_record(GMT_API_cudaMemPoolCreate, r_, GMT_DEVICE_CURRENT, GMT_OUT(memPool), 0, 0,
			0, 0);
	return r_;
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
	GMT_FORWARD_FREE(cudaMemPoolDestroy, MISSING, memPool);
	gmt_hook_record(GMT_API_cudaMemPoolDestroy, r_, GMT_DEVICE_CURRENT, GMT_U(memPool), 0, 0, 0,
			0);
	return r_;
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
	GMT_FORWARD(cudaMemPoolTrimTo, MISSING, memPool, minBytesToKeep);
	gmt_hook_record(GMT_API_cudaMemPoolTrimTo, r_, GMT_DEVICE_CURRENT, GMT_U(memPool),
			minBytesToKeep, 0, 0, 0);
	return r_;
}

static uint64_t channel_bytes(const struct cudaChannelFormatDesc *desc)
{
	if (!desc)
		return 0;
	uint64_t bits =
	    (uint64_t)(unsigned)desc->x + (unsigned)desc->y + (unsigned)desc->z + (unsigned)desc->w;
	return (bits + 7) / 8;
}

static uint64_t at_least_1(size_t n)
{
	return n ? n : 1;
}

cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
			    size_t width, size_t height, unsigned int flags)
{
	GMT_FORWARD(cudaMallocArray, MISSING, array, desc, width, height, flags);
	gmt_hook_record(GMT_API_cudaMallocArray, r_, GMT_DEVICE_CURRENT, GMT_OUT(array),
			width * at_least_1(height) * channel_bytes(desc), 0, 0, 0);
	return r_;
}

cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
			      struct cudaExtent extent, unsigned int flags)
{
	GMT_FORWARD(cudaMalloc3DArray, MISSING, array, desc, extent, flags);
	gmt_hook_record(GMT_API_cudaMalloc3DArray, r_, GMT_DEVICE_CURRENT, GMT_OUT(array),
			extent.width * at_least_1(extent.height) * at_least_1(extent.depth) *
			    channel_bytes(desc),
			0, 0, 0);
	return r_;
}

cudaError_t cudaFreeArray(cudaArray_t array)
{
	GMT_FORWARD_FREE(cudaFreeArray, MISSING, array);
	gmt_hook_record(GMT_API_cudaFreeArray, r_, GMT_DEVICE_CURRENT, GMT_U(array), 0, 0, 0, 0);
	return r_;
}

cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags)
{
	GMT_FORWARD(cudaIpcOpenMemHandle, MISSING, devPtr, handle, flags);
	gmt_hook_record(GMT_API_cudaIpcOpenMemHandle, r_, GMT_DEVICE_CURRENT, GMT_OUT(devPtr), 0,
			flags, 0, GMT_AUX);
	return r_;
}

cudaError_t cudaIpcCloseMemHandle(void *devPtr)
{
	GMT_FORWARD_FREE(cudaIpcCloseMemHandle, MISSING, devPtr);
	gmt_hook_record(GMT_API_cudaIpcCloseMemHandle, r_, GMT_DEVICE_CURRENT, GMT_U(devPtr), 0, 0,
			0, 0);
	return r_;
}
