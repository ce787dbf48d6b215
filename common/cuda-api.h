/* The CUDA entry points gpumemtrace interposes, as X-macro lists.
 *
 * X(name, base, params): `name` is the exported ELF symbol, `base` the name
 * cuGetProcAddress and cudaGetDriverEntryPoint are asked for. This header
 * includes nothing, so tests/cuda-decls can expand the lists under cuda.h's
 * own types and check every signature against the toolkit's prototypes.
 *
 * Every hook records the API id of its own name, GMT_API_<name> in
 * include/gpumemtrace/format.h, except the lookups in GMT_HOOKS_LOOKUP.
 * preload/real.h fails to compile when an id has no hook, or a hook
 * neither an id nor a GMT_HOOKS_LOOKUP row.
 *
 * Adding a hook touches:
 *   1. the table: a row here (GMT_DRIVER_HOOKS or GMT_RUNTIME_HOOKS;
 *      GMT_DRIVER_HOOKS_LEGACY for an ABI cuda.h declares only internally)
 *      and its id, a row appended to GMT_API_LIST in format.h with the next
 *      id (ids are on disk), op, kind and space; or, for a hook that
 *      records no event, a GMT_HOOKS_LOOKUP row instead of the id;
 *   2. the wrapper, in preload/hooks/ (driver.c, cudart.c, context.c...);
 *   3. the simulated function, in tests/sim/driver*.c or runtime.c.
 * The rest follows from the lists: prototypes, pfn_ typedefs and hook ids
 * (preload/hooks/hooks.h, preload/real.h), the table of real functions
 * (preload/real.c), the
 * export list (preload/hooks/exports.map.in, expanded at build time), the
 * API names (common/api.c), the simulator's prototypes and the check
 * against cuda.h (tests/cuda-decls/signatures.c).
 *
 * The unversioned cuMemAlloc, cuMemFree, cuMemAllocPitch and cuMemAllocHost
 * are the legacy 32-bit ABIs and are deliberately absent. */
#ifndef GMT_CUDA_API_H
#define GMT_CUDA_API_H

/* Driver functions returning CUresult. */
/* clang-format off */
#define GMT_DRIVER_HOOKS(X)                                                                 \
	X(cuMemAlloc_v2, cuMemAlloc, (CUdeviceptr * dptr, size_t bytesize))                 \
	X(cuMemAllocPitch_v2, cuMemAllocPitch,                                              \
	  (CUdeviceptr * dptr, size_t * pPitch, size_t WidthInBytes, size_t Height,         \
	   unsigned int ElementSizeBytes))                                                  \
	X(cuMemFree_v2, cuMemFree, (CUdeviceptr dptr))                                      \
	X(cuMemAllocManaged, cuMemAllocManaged,                                             \
	  (CUdeviceptr * dptr, size_t bytesize, unsigned int flags))                        \
	X(cuMemAllocHost_v2, cuMemAllocHost, (void **pp, size_t bytesize))                  \
	X(cuMemHostAlloc, cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags)) \
	X(cuMemFreeHost, cuMemFreeHost, (void *p))                                          \
	X(cuMemHostRegister_v2, cuMemHostRegister,                                          \
	  (void *p, size_t bytesize, unsigned int Flags))                                   \
	X(cuMemHostUnregister, cuMemHostUnregister, (void *p))                              \
	X(cuMemAllocAsync, cuMemAllocAsync,                                                 \
	  (CUdeviceptr * dptr, size_t bytesize, CUstream hStream))                          \
	X(cuMemAllocAsync_ptsz, cuMemAllocAsync,                                            \
	  (CUdeviceptr * dptr, size_t bytesize, CUstream hStream))                          \
	X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync,                                 \
	  (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream))       \
	X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync,                            \
	  (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream))       \
	X(cuMemFreeAsync, cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream))             \
	X(cuMemFreeAsync_ptsz, cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream))        \
	X(cuMemPoolCreate, cuMemPoolCreate,                                                 \
	  (CUmemoryPool * pool, const CUmemPoolProps *poolProps))                           \
	X(cuMemPoolDestroy, cuMemPoolDestroy, (CUmemoryPool pool))                          \
	X(cuMemPoolTrimTo, cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep))     \
	X(cuMemCreate, cuMemCreate,                                                         \
	  (CUmemGenericAllocationHandle * handle, size_t size,                              \
	   const CUmemAllocationProp *prop, unsigned long long flags))                      \
	X(cuMemRelease, cuMemRelease, (CUmemGenericAllocationHandle handle))                \
	X(cuMemMap, cuMemMap,                                                               \
	  (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, \
	   unsigned long long flags))                                                       \
	X(cuMemUnmap, cuMemUnmap, (CUdeviceptr ptr, size_t size))                           \
	X(cuMemAddressReserve, cuMemAddressReserve,                                         \
	  (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr,              \
	   unsigned long long flags))                                                       \
	X(cuMemAddressFree, cuMemAddressFree, (CUdeviceptr ptr, size_t size))               \
	X(cuMemRetainAllocationHandle, cuMemRetainAllocationHandle,                         \
	  (CUmemGenericAllocationHandle * handle, void *addr))                              \
	X(cuMemImportFromShareableHandle, cuMemImportFromShareableHandle,                   \
	  (CUmemGenericAllocationHandle * handle, void *osHandle,                           \
	   CUmemAllocationHandleType shHandleType))                                         \
	X(cuArrayCreate_v2, cuArrayCreate,                                                  \
	  (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray))                 \
	X(cuArray3DCreate_v2, cuArray3DCreate,                                              \
	  (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray))               \
	X(cuArrayDestroy, cuArrayDestroy, (CUarray hArray))                                 \
	X(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle,                                        \
	  (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags))                 \
	X(cuIpcCloseMemHandle, cuIpcCloseMemHandle, (CUdeviceptr dptr))                     \
	X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev)) \
	X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, (CUdevice dev))          \
	X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, (CUdevice dev))              \
	X(cuCtxCreate_v4, cuCtxCreate,                                                      \
	  (CUcontext * pctx, CUctxCreateParams * ctxCreateParams, unsigned int flags,       \
	   CUdevice dev))                                                                   \
	X(cuCtxDestroy_v2, cuCtxDestroy, (CUcontext ctx))                                   \
	X(cuGetProcAddress_v2, cuGetProcAddress,                                            \
	  (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,               \
	   CUdriverProcAddressQueryResult *symbolStatus))
/* clang-format on */

/* Older forms cuda.h declares only under __CUDA_API_VERSION_INTERNAL (the
 * signature check's legacy mode): CUDA 11.3-11.8's four-argument
 * cuGetProcAddress, and cuCtxCreate before 12.5 (_v2, and 11.4's _v3).
 * The unversioned cuCtxCreate, cuCtxDestroy, cuDevicePrimaryCtxRelease and
 * cuDevicePrimaryCtxReset are older ABIs still and are not wrapped. */
/* clang-format off */
#define GMT_DRIVER_HOOKS_LEGACY(X)                                                          \
	X(cuGetProcAddress, cuGetProcAddress,                                               \
	  (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags))              \
	X(cuCtxCreate_v2, cuCtxCreate, (CUcontext * pctx, unsigned int flags, CUdevice dev)) \
	X(cuCtxCreate_v3, cuCtxCreate,                                                      \
	  (CUcontext * pctx, CUexecAffinityParam * paramsArray, int numParams,              \
	   unsigned int flags, CUdevice dev))
/* clang-format on */

/* Hooks that record no event: the entry-point lookups, which hand out our
 * wrappers (X(name), one of the hooks above or below). */
#define GMT_HOOKS_LOOKUP(X)                                                                        \
	X(cuGetProcAddress_v2)                                                                     \
	X(cuGetProcAddress)                                                                        \
	X(cudaGetDriverEntryPoint)                                                                 \
	X(cudaGetDriverEntryPoint_ptsz)                                                            \
	X(cudaGetDriverEntryPointByVersion)                                                        \
	X(cudaGetDriverEntryPointByVersion_ptsz)

/* Driver functions the tracer calls but does not interpose. */
/* clang-format off */
#define GMT_DRIVER_USED(X)                                                                  \
	X(cuInit, cuInit, (unsigned int Flags))                                             \
	X(cuDriverGetVersion, cuDriverGetVersion, (int *driverVersion))                     \
	X(cuDeviceGetCount, cuDeviceGetCount, (int *count))                                 \
	X(cuDeviceGet, cuDeviceGet, (CUdevice * device, int ordinal))                       \
	X(cuDeviceGetName, cuDeviceGetName, (char *name, int len, CUdevice dev))            \
	X(cuDeviceGetUuid_v2, cuDeviceGetUuid, (CUuuid * uuid, CUdevice dev))               \
	X(cuDeviceTotalMem_v2, cuDeviceTotalMem, (size_t * bytes, CUdevice dev))            \
	X(cuDeviceGetAttribute, cuDeviceGetAttribute,                                       \
	  (int *pi, CUdevice_attribute attrib, CUdevice dev))                               \
	X(cuCtxGetCurrent, cuCtxGetCurrent, (CUcontext * pctx))                             \
	X(cuCtxGetDevice, cuCtxGetDevice, (CUdevice * device))                              \
	X(cuMemGetInfo_v2, cuMemGetInfo, (size_t * free, size_t * total))
/* clang-format on */

/* Runtime functions returning cudaError_t. */
/* clang-format off */
#define GMT_RUNTIME_HOOKS(X)                                                                \
	X(cudaMalloc, cudaMalloc, (void **devPtr, size_t size))                             \
	X(cudaMallocPitch, cudaMallocPitch,                                                 \
	  (void **devPtr, size_t *pitch, size_t width, size_t height))                      \
	X(cudaMalloc3D, cudaMalloc3D,                                                       \
	  (struct cudaPitchedPtr * pitchedDevPtr, struct cudaExtent extent))                \
	X(cudaFree, cudaFree, (void *devPtr))                                               \
	X(cudaMallocManaged, cudaMallocManaged,                                             \
	  (void **devPtr, size_t size, unsigned int flags))                                 \
	X(cudaMallocHost, cudaMallocHost, (void **ptr, size_t size))                        \
	X(cudaHostAlloc, cudaHostAlloc, (void **pHost, size_t size, unsigned int flags))    \
	X(cudaFreeHost, cudaFreeHost, (void *ptr))                                          \
	X(cudaHostRegister, cudaHostRegister, (void *ptr, size_t size, unsigned int flags)) \
	X(cudaHostUnregister, cudaHostUnregister, (void *ptr))                              \
	X(cudaMallocAsync, cudaMallocAsync,                                                 \
	  (void **devPtr, size_t size, cudaStream_t hStream))                               \
	X(cudaMallocAsync_ptsz, cudaMallocAsync,                                            \
	  (void **devPtr, size_t size, cudaStream_t hStream))                               \
	X(cudaMallocFromPoolAsync, cudaMallocFromPoolAsync,                                 \
	  (void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream))            \
	X(cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync,                            \
	  (void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream))            \
	X(cudaFreeAsync, cudaFreeAsync, (void *devPtr, cudaStream_t hStream))               \
	X(cudaFreeAsync_ptsz, cudaFreeAsync, (void *devPtr, cudaStream_t hStream))          \
	X(cudaMemPoolCreate, cudaMemPoolCreate,                                             \
	  (cudaMemPool_t * memPool, const struct cudaMemPoolProps *poolProps))              \
	X(cudaMemPoolDestroy, cudaMemPoolDestroy, (cudaMemPool_t memPool))                  \
	X(cudaMemPoolTrimTo, cudaMemPoolTrimTo, (cudaMemPool_t memPool, size_t minBytesToKeep)) \
	X(cudaMallocArray, cudaMallocArray,                                                 \
	  (cudaArray_t * array, const struct cudaChannelFormatDesc *desc, size_t width,     \
	   size_t height, unsigned int flags))                                              \
	X(cudaMalloc3DArray, cudaMalloc3DArray,                                             \
	  (cudaArray_t * array, const struct cudaChannelFormatDesc *desc,                   \
	   struct cudaExtent extent, unsigned int flags))                                   \
	X(cudaFreeArray, cudaFreeArray, (cudaArray_t array))                                \
	X(cudaIpcOpenMemHandle, cudaIpcOpenMemHandle,                                       \
	  (void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags))                   \
	X(cudaIpcCloseMemHandle, cudaIpcCloseMemHandle, (void *devPtr))                     \
	X(cudaGetDriverEntryPoint, cudaGetDriverEntryPoint,                                 \
	  (const char *symbol, void **funcPtr, unsigned long long flags,                    \
	   enum cudaDriverEntryPointQueryResult *driverStatus))                             \
	X(cudaGetDriverEntryPoint_ptsz, cudaGetDriverEntryPoint,                            \
	  (const char *symbol, void **funcPtr, unsigned long long flags,                    \
	   enum cudaDriverEntryPointQueryResult *driverStatus))                             \
	X(cudaGetDriverEntryPointByVersion, cudaGetDriverEntryPointByVersion,               \
	  (const char *symbol, void **funcPtr, unsigned int cudaVersion,                    \
	   unsigned long long flags, enum cudaDriverEntryPointQueryResult *driverStatus))   \
	X(cudaGetDriverEntryPointByVersion_ptsz, cudaGetDriverEntryPointByVersion,          \
	  (const char *symbol, void **funcPtr, unsigned int cudaVersion,                    \
	   unsigned long long flags, enum cudaDriverEntryPointQueryResult *driverStatus))
/* clang-format on */

#endif
