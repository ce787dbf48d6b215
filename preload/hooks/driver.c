/* Driver API wrappers: reached by direct linking, dlsym, cuGetProcAddress
 * and cudaGetDriverEntryPoint alike. */
#include "preload/hooks/forward.h"

#define MISSING GMT_DRIVER_MISSING
#define HOST	(-1) /* device of pinned host memory */

/* ---- device memory ---- */

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	GMT_FORWARD(cuMemAlloc_v2, MISSING, dptr, bytesize);
	gmt_hook_record(GMT_API_cuMemAlloc_v2, r_, GMT_DEVICE_CURRENT, GMT_OUT(dptr), bytesize, 0,
			0, 0);
	return r_;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
			    unsigned int ElementSizeBytes)
{
	GMT_FORWARD(cuMemAllocPitch_v2, MISSING, dptr, pPitch, WidthInBytes, Height,
		    ElementSizeBytes);
	size_t pitch = r_ == CUDA_SUCCESS && pPitch ? *pPitch : WidthInBytes;
	gmt_hook_record(GMT_API_cuMemAllocPitch_v2, r_, GMT_DEVICE_CURRENT, GMT_OUT(dptr),
			pitch * Height, pitch, WidthInBytes, GMT_AUX2);
	return r_;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	GMT_FORWARD_FREE(cuMemFree_v2, MISSING, dptr);
	gmt_hook_record(GMT_API_cuMemFree_v2, r_, GMT_DEVICE_CURRENT, dptr, 0, 0, 0, 0);
	return r_;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	GMT_FORWARD(cuMemAllocManaged, MISSING, dptr, bytesize, flags);
	gmt_hook_record(GMT_API_cuMemAllocManaged, r_, GMT_DEVICE_CURRENT, GMT_OUT(dptr), bytesize,
			flags, 0, GMT_AUX);
	return r_;
}

/* ---- pinned host memory ---- */

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	GMT_FORWARD(cuMemAllocHost_v2, MISSING, pp, bytesize);
	gmt_hook_record(GMT_API_cuMemAllocHost_v2, r_, HOST, GMT_OUT(pp), bytesize, 0, 0, 0);
	return r_;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	GMT_FORWARD(cuMemHostAlloc, MISSING, pp, bytesize, Flags);
	gmt_hook_record(GMT_API_cuMemHostAlloc, r_, HOST, GMT_OUT(pp), bytesize, Flags, 0, GMT_AUX);
	return r_;
}

CUresult cuMemFreeHost(void *p)
{
	GMT_FORWARD_FREE(cuMemFreeHost, MISSING, p);
	gmt_hook_record(GMT_API_cuMemFreeHost, r_, HOST, GMT_U(p), 0, 0, 0, 0);
	return r_;
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	GMT_FORWARD(cuMemHostRegister_v2, MISSING, p, bytesize, Flags);
	gmt_hook_record(GMT_API_cuMemHostRegister_v2, r_, HOST, GMT_U(p), bytesize, Flags, 0,
			GMT_AUX);
	return r_;
}

CUresult cuMemHostUnregister(void *p)
{
	GMT_FORWARD_FREE(cuMemHostUnregister, MISSING, p);
	gmt_hook_record(GMT_API_cuMemHostUnregister, r_, HOST, GMT_U(p), 0, 0, 0, 0);
	return r_;
}

/* ---- stream-ordered memory ---- */

#define ALLOC_ASYNC(name)                                                                          \
	CUresult name(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)                        \
	{                                                                                          \
		GMT_FORWARD(name, MISSING, dptr, bytesize, hStream);                               \
		gmt_hook_record(GMT_API_##name, r_, GMT_DEVICE_CURRENT, GMT_OUT(dptr), bytesize,   \
				GMT_U(hStream), 0, GMT_AUX);                                       \
		return r_;                                                                         \
	}
ALLOC_ASYNC(cuMemAllocAsync)
ALLOC_ASYNC(cuMemAllocAsync_ptsz)

#define ALLOC_FROM_POOL(name)                                                                      \
	CUresult name(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)     \
	{                                                                                          \
		GMT_FORWARD(name, MISSING, dptr, bytesize, pool, hStream);                         \
		gmt_hook_record(GMT_API_##name, r_, GMT_DEVICE_CURRENT, GMT_OUT(dptr), bytesize,   \
				GMT_U(hStream), GMT_U(pool), GMT_AUX2);                            \
		return r_;                                                                         \
	}
ALLOC_FROM_POOL(cuMemAllocFromPoolAsync)
ALLOC_FROM_POOL(cuMemAllocFromPoolAsync_ptsz)

#define FREE_ASYNC(name)                                                                           \
	CUresult name(CUdeviceptr dptr, CUstream hStream)                                          \
	{                                                                                          \
		GMT_FORWARD_FREE(name, MISSING, dptr, hStream);                                    \
		gmt_hook_record(GMT_API_##name, r_, GMT_DEVICE_CURRENT, dptr, 0, GMT_U(hStream),   \
				0, GMT_AUX);                                                       \
		return r_;                                                                         \
	}
FREE_ASYNC(cuMemFreeAsync)
FREE_ASYNC(cuMemFreeAsync_ptsz)

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	GMT_FORWARD(cuMemPoolCreate, MISSING, pool, poolProps);
	gmt_hook_record(GMT_API_cuMemPoolCreate, r_, GMT_DEVICE_CURRENT, GMT_OUT(pool), 0, 0, 0, 0);
	return r_;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	GMT_FORWARD_FREE(cuMemPoolDestroy, MISSING, pool);
	gmt_hook_record(GMT_API_cuMemPoolDestroy, r_, GMT_DEVICE_CURRENT, GMT_U(pool), 0, 0, 0, 0);
	return r_;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	GMT_FORWARD(cuMemPoolTrimTo, MISSING, pool, minBytesToKeep);
	gmt_hook_record(GMT_API_cuMemPoolTrimTo, r_, GMT_DEVICE_CURRENT, GMT_U(pool),
			minBytesToKeep, 0, 0, 0);
	return r_;
}

/* ---- virtual memory management ---- */

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
		     const CUmemAllocationProp *prop, unsigned long long flags)
{
	GMT_FORWARD(cuMemCreate, MISSING, handle, size, prop, flags);
	/* The location says whose memory this is: a host location is not
	 * device memory. */
	unsigned loc = prop ? (unsigned)prop->location.type : 0;
	int32_t dev = prop && loc == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
	gmt_hook_record(GMT_API_cuMemCreate, r_, dev, GMT_OUT(handle), size, loc, 0, GMT_AUX);
	return r_;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	GMT_FORWARD_FREE(cuMemRelease, MISSING, handle);
	gmt_hook_record(GMT_API_cuMemRelease, r_, GMT_DEVICE_CURRENT, handle, 0, 0, 0, 0);
	return r_;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
		  unsigned long long flags)
{
	GMT_FORWARD(cuMemMap, MISSING, ptr, size, offset, handle, flags);
	gmt_hook_record(GMT_API_cuMemMap, r_, GMT_DEVICE_CURRENT, ptr, size, handle, offset,
			GMT_AUX2);
	return r_;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	GMT_FORWARD_FREE(cuMemUnmap, MISSING, ptr, size);
	gmt_hook_record(GMT_API_cuMemUnmap, r_, GMT_DEVICE_CURRENT, ptr, size, 0, 0, 0);
	return r_;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
			     unsigned long long flags)
{
	GMT_FORWARD(cuMemAddressReserve, MISSING, ptr, size, alignment, addr, flags);
	gmt_hook_record(GMT_API_cuMemAddressReserve, r_, GMT_DEVICE_CURRENT, GMT_OUT(ptr), size,
			alignment, addr, GMT_AUX2);
	return r_;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	GMT_FORWARD_FREE(cuMemAddressFree, MISSING, ptr, size);
	gmt_hook_record(GMT_API_cuMemAddressFree, r_, GMT_DEVICE_CURRENT, ptr, size, 0, 0, 0);
	return r_;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	GMT_FORWARD(cuMemRetainAllocationHandle, MISSING, handle, addr);
	gmt_hook_record(GMT_API_cuMemRetainAllocationHandle, r_, GMT_DEVICE_CURRENT,
			GMT_OUT(handle), 0, GMT_U(addr), 0, GMT_AUX);
	return r_;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
					CUmemAllocationHandleType shHandleType)
{
	GMT_FORWARD(cuMemImportFromShareableHandle, MISSING, handle, osHandle, shHandleType);
	gmt_hook_record(GMT_API_cuMemImportFromShareableHandle, r_, GMT_DEVICE_CURRENT,
			GMT_OUT(handle), 0, (uint64_t)shHandleType, 0, GMT_AUX);
	return r_;
}

/* ---- arrays ---- */

static uint64_t format_bytes(CUarray_format f)
{
	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	default:
		return 4;
	}
}

static uint64_t at_least_1(size_t n)
{
	return n ? n : 1;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
	GMT_FORWARD(cuArrayCreate_v2, MISSING, pHandle, pAllocateArray);
	const CUDA_ARRAY_DESCRIPTOR *d = pAllocateArray;
	uint64_t bytes =
	    d ? d->Width * at_least_1(d->Height) * format_bytes(d->Format) * d->NumChannels : 0;
	gmt_hook_record(GMT_API_cuArrayCreate_v2, r_, GMT_DEVICE_CURRENT, GMT_OUT(pHandle), bytes,
			0, 0, 0);
	return r_;
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
	GMT_FORWARD(cuArray3DCreate_v2, MISSING, pHandle, pAllocateArray);
	const CUDA_ARRAY3D_DESCRIPTOR *d = pAllocateArray;
	uint64_t bytes = d ? d->Width * at_least_1(d->Height) * at_least_1(d->Depth) *
				 format_bytes(d->Format) * d->NumChannels
			   : 0;
	gmt_hook_record(GMT_API_cuArray3DCreate_v2, r_, GMT_DEVICE_CURRENT, GMT_OUT(pHandle), bytes,
			0, 0, 0);
	return r_;
}

CUresult cuArrayDestroy(CUarray hArray)
{
	GMT_FORWARD_FREE(cuArrayDestroy, MISSING, hArray);
	gmt_hook_record(GMT_API_cuArrayDestroy, r_, GMT_DEVICE_CURRENT, GMT_U(hArray), 0, 0, 0, 0);
	return r_;
}

/* ---- IPC ---- */

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	GMT_FORWARD(cuIpcOpenMemHandle_v2, MISSING, pdptr, handle, Flags);
	gmt_hook_record(GMT_API_cuIpcOpenMemHandle_v2, r_, GMT_DEVICE_CURRENT, GMT_OUT(pdptr), 0,
			Flags, 0, GMT_AUX);
	return r_;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	GMT_FORWARD_FREE(cuIpcCloseMemHandle, MISSING, dptr);
	gmt_hook_record(GMT_API_cuIpcCloseMemHandle, r_, GMT_DEVICE_CURRENT, dptr, 0, 0, 0, 0);
	return r_;
}
