/* Entry points the simulated CUDA exports beyond common/cuda-api.h's lists,
 * as X-macro lists of the same shape: X(exported_name, base_name, (params)).
 *
 * Like cuda-api.h this header includes nothing, so tests/cuda-decls can
 * expand the lists under the toolkit's own cuda.h and check every signature.
 * Types not in common/cuda-types.h come from tests/sim/sim-cuda.h. */
#ifndef SIM_API_H
#define SIM_API_H

/* Driver functions returning CUresult, declared by cuda.h as is. */
#define SIM_DRIVER_EXTRA(X)                                                                        \
	X(cuCtxSetCurrent, cuCtxSetCurrent, (CUcontext ctx))                                       \
	X(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity,                            \
	  (size_t * granularity, const CUmemAllocationProp *prop,                                  \
	   CUmemAllocationGranularity_flags option))                                               \
	X(cuMemSetAccess, cuMemSetAccess,                                                          \
	  (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count))               \
	X(cuMemExportToShareableHandle, cuMemExportToShareableHandle,                              \
	  (void *shareableHandle, CUmemGenericAllocationHandle handle,                             \
	   CUmemAllocationHandleType handleType, unsigned long long flags))                        \
	X(cuIpcGetMemHandle, cuIpcGetMemHandle, (CUipcMemHandle * pHandle, CUdeviceptr dptr))      \
	X(cuGetErrorString, cuGetErrorString, (CUresult error, const char **pStr))                 \
	X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool,                                    \
	  (CUmemoryPool * pool_out, CUdevice dev))                                                 \
	X(cuMemPoolSetAttribute, cuMemPoolSetAttribute,                                            \
	  (CUmemoryPool pool, CUmemPool_attribute attr, void *value))                              \
	X(cuMemPoolGetAttribute, cuMemPoolGetAttribute,                                            \
	  (CUmemoryPool pool, CUmemPool_attribute attr, void *value))                              \
	X(cuModuleLoadData, cuModuleLoadData, (CUmodule * module, const void *image))              \
	X(cuModuleUnload, cuModuleUnload, (CUmodule hmod))                                         \
	X(cuModuleGetFunction, cuModuleGetFunction,                                                \
	  (CUfunction * hfunc, CUmodule hmod, const char *name))                                   \
	X(cuLaunchKernel, cuLaunchKernel,                                                          \
	  (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,      \
	   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                 \
	   unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra))

/* Older ABIs the driver still exports under their unversioned (or _v2)
 * names. cuda.h declares them only with __CUDA_API_VERSION_INTERNAL, where
 * tests/cuda-decls checks them. The 32-bit cuMemAlloc family is the reason
 * an interposer must never treat "cuMemAlloc" as "cuMemAlloc_v2". */
#define SIM_DRIVER_OLD(X)                                                                          \
	X(cuMemAlloc, cuMemAlloc, (unsigned int *dptr, unsigned int bytesize))                     \
	X(cuMemAllocPitch, cuMemAllocPitch,                                                        \
	  (unsigned int *dptr, unsigned int *pPitch, unsigned int WidthInBytes,                    \
	   unsigned int Height, unsigned int ElementSizeBytes))                                    \
	X(cuMemFree, cuMemFree, (unsigned int dptr))                                               \
	X(cuMemAllocHost, cuMemAllocHost, (void **pp, unsigned int bytesize))                      \
	X(cuMemHostRegister, cuMemHostRegister, (void *p, size_t bytesize, unsigned int Flags))    \
	X(cuDeviceGetUuid, cuDeviceGetUuid, (CUuuid * uuid, CUdevice dev))

/* Runtime functions returning cudaError_t (cudaGetErrorString is apart). */
#define SIM_RUNTIME_EXTRA(X)                                                                       \
	X(cudaSetDevice, cudaSetDevice, (int device))                                              \
	X(cudaGetDevice, cudaGetDevice, (int *device))                                             \
	X(cudaGetDeviceCount, cudaGetDeviceCount, (int *count))                                    \
	X(cudaDeviceSynchronize, cudaDeviceSynchronize, (void))                                    \
	X(cudaGetLastError, cudaGetLastError, (void))                                              \
	X(cudaPeekAtLastError, cudaPeekAtLastError, (void))                                        \
	X(cudaMemGetInfo, cudaMemGetInfo, (size_t * free, size_t * total))                         \
	X(cudaDriverGetVersion, cudaDriverGetVersion, (int *driverVersion))                        \
	X(cudaIpcGetMemHandle, cudaIpcGetMemHandle, (cudaIpcMemHandle_t * handle, void *devPtr))   \
	X(cudaDeviceGetDefaultMemPool, cudaDeviceGetDefaultMemPool,                                \
	  (cudaMemPool_t * memPool, int device))                                                   \
	X(cudaMemPoolSetAttribute, cudaMemPoolSetAttribute,                                        \
	  (cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value))                         \
	X(cudaMemPoolGetAttribute, cudaMemPoolGetAttribute,                                        \
	  (cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value))

#endif
