/* The layout facts of our CUDA declarations, as X-macro lists expanded once
 * under our headers and once under the toolkit's (layout.h, layout-*.c):
 *   SIZE(T)          sizeof and _Alignof
 *   SCALAR(T)        which integer type T is (enums: their underlying type)
 *   FIELD(T, f)      offsetof and sizeof of a member (nested: a.b)
 *   CONST(c)         the value of an enum constant or macro
 *   CONSTX(ours, c)  our spelling of the toolkit's constant c
 *   SAME(T, U)       T and U are the same type (a static assertion in both)
 * t-cuda-decls.sh checks every enum constant and struct member in
 * common/cuda-types.h and tests/sim/sim-cuda.h appears here. */
#ifndef GMT_LAYOUT_LIST_H
#define GMT_LAYOUT_LIST_H

/* One line per few facts reads better than a formatter's layout. */
/* clang-format off */

/* common/cuda-types.h */
#define GMT_LAYOUT_HOOKS(SIZE, SCALAR, FIELD, CONST, CONSTX, SAME) \
	SIZE(CUresult) SCALAR(CUresult) SAME(CUresult, enum cudaError_enum)                \
	CONST(CUDA_SUCCESS) CONST(CUDA_ERROR_INVALID_VALUE)                                \
	CONST(CUDA_ERROR_OUT_OF_MEMORY) CONST(CUDA_ERROR_NOT_INITIALIZED)                  \
	CONST(CUDA_ERROR_DEINITIALIZED) CONST(CUDA_ERROR_STUB_LIBRARY)                     \
	CONST(CUDA_ERROR_NO_DEVICE) CONST(CUDA_ERROR_INVALID_DEVICE)                       \
	CONST(CUDA_ERROR_INVALID_CONTEXT) CONST(CUDA_ERROR_INVALID_HANDLE)                 \
	CONST(CUDA_ERROR_NOT_FOUND) CONST(CUDA_ERROR_NOT_SUPPORTED)                        \
	CONST(CUDA_ERROR_UNKNOWN)                                                          \
	SIZE(CUdevice) SCALAR(CUdevice)                                                    \
	SIZE(CUdeviceptr) SCALAR(CUdeviceptr)                                              \
	SIZE(cuuint64_t) SCALAR(cuuint64_t)                                                \
	SIZE(CUmemGenericAllocationHandle) SCALAR(CUmemGenericAllocationHandle)            \
	SAME(CUcontext, struct CUctx_st *)                                                 \
	SAME(CUstream, struct CUstream_st *)                                               \
	SAME(CUmemoryPool, struct CUmemPoolHandle_st *)                                    \
	SAME(CUarray, struct CUarray_st *)                                                 \
	SAME(CUmemPoolProps *, struct CUmemPoolProps_st *)                                 \
	SAME(CUexecAffinityParam *, struct CUexecAffinityParam_st *)                       \
	SAME(CUctxCreateParams *, struct CUctxCreateParams_st *)                           \
	SIZE(CUdriverProcAddressQueryResult) SCALAR(CUdriverProcAddressQueryResult)        \
	SAME(CUdriverProcAddressQueryResult, enum CUdriverProcAddressQueryResult_enum)     \
	CONST(CU_GET_PROC_ADDRESS_SUCCESS) CONST(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)     \
	CONST(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)                                  \
	SIZE(enum CUdriverProcAddress_flags_enum)                                          \
	CONST(CU_GET_PROC_ADDRESS_DEFAULT) CONST(CU_GET_PROC_ADDRESS_LEGACY_STREAM)        \
	CONST(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)                               \
	SIZE(CUdevice_attribute) SCALAR(CUdevice_attribute)                                \
	SAME(CUdevice_attribute, enum CUdevice_attribute_enum)                             \
	CONST(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)                                \
	CONST(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)                                \
	SIZE(CUuuid) SAME(CUuuid, struct CUuuid_st) FIELD(CUuuid, bytes)                   \
	SIZE(CUmemLocationType) SCALAR(CUmemLocationType)                                  \
	SAME(CUmemLocationType, enum CUmemLocationType_enum)                               \
	CONST(CU_MEM_LOCATION_TYPE_INVALID) CONST(CU_MEM_LOCATION_TYPE_DEVICE)             \
	CONST(CU_MEM_LOCATION_TYPE_HOST) CONST(CU_MEM_LOCATION_TYPE_HOST_NUMA)             \
	CONST(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)                                      \
	SIZE(CUmemAllocationType) SCALAR(CUmemAllocationType)                              \
	SAME(CUmemAllocationType, enum CUmemAllocationType_enum)                           \
	CONST(CU_MEM_ALLOCATION_TYPE_INVALID) CONST(CU_MEM_ALLOCATION_TYPE_PINNED)         \
	SIZE(CUmemAllocationHandleType) SCALAR(CUmemAllocationHandleType)                  \
	SAME(CUmemAllocationHandleType, enum CUmemAllocationHandleType_enum)               \
	CONST(CU_MEM_HANDLE_TYPE_NONE) CONST(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)     \
	CONST(CU_MEM_HANDLE_TYPE_WIN32) CONST(CU_MEM_HANDLE_TYPE_WIN32_KMT)                \
	CONST(CU_MEM_HANDLE_TYPE_FABRIC)                                                   \
	SIZE(CUmemLocation) SAME(CUmemLocation, struct CUmemLocation_st)                   \
	FIELD(CUmemLocation, type) FIELD(CUmemLocation, id)                                \
	SIZE(CUmemAllocationProp) SAME(CUmemAllocationProp, struct CUmemAllocationProp_st) \
	FIELD(CUmemAllocationProp, type) FIELD(CUmemAllocationProp, requestedHandleTypes)  \
	FIELD(CUmemAllocationProp, location)                                               \
	FIELD(CUmemAllocationProp, win32HandleMetaData)                                    \
	FIELD(CUmemAllocationProp, allocFlags)                                             \
	FIELD(CUmemAllocationProp, allocFlags.compressionType)                             \
	FIELD(CUmemAllocationProp, allocFlags.gpuDirectRDMACapable)                        \
	FIELD(CUmemAllocationProp, allocFlags.usage)                                       \
	FIELD(CUmemAllocationProp, allocFlags.reserved)                                    \
	SIZE(CUarray_format) SCALAR(CUarray_format)                                        \
	SAME(CUarray_format, enum CUarray_format_enum)                                     \
	CONST(CU_AD_FORMAT_UNSIGNED_INT8) CONST(CU_AD_FORMAT_UNSIGNED_INT16)               \
	CONST(CU_AD_FORMAT_UNSIGNED_INT32) CONST(CU_AD_FORMAT_SIGNED_INT8)                 \
	CONST(CU_AD_FORMAT_SIGNED_INT16) CONST(CU_AD_FORMAT_SIGNED_INT32)                  \
	CONST(CU_AD_FORMAT_HALF) CONST(CU_AD_FORMAT_FLOAT)                                 \
	SIZE(CUDA_ARRAY_DESCRIPTOR)                                                        \
	SAME(CUDA_ARRAY_DESCRIPTOR, struct CUDA_ARRAY_DESCRIPTOR_st)                       \
	FIELD(CUDA_ARRAY_DESCRIPTOR, Width) FIELD(CUDA_ARRAY_DESCRIPTOR, Height)           \
	FIELD(CUDA_ARRAY_DESCRIPTOR, Format) FIELD(CUDA_ARRAY_DESCRIPTOR, NumChannels)     \
	SIZE(CUDA_ARRAY3D_DESCRIPTOR)                                                      \
	SAME(CUDA_ARRAY3D_DESCRIPTOR, struct CUDA_ARRAY3D_DESCRIPTOR_st)                   \
	FIELD(CUDA_ARRAY3D_DESCRIPTOR, Width) FIELD(CUDA_ARRAY3D_DESCRIPTOR, Height)       \
	FIELD(CUDA_ARRAY3D_DESCRIPTOR, Depth) FIELD(CUDA_ARRAY3D_DESCRIPTOR, Format)       \
	FIELD(CUDA_ARRAY3D_DESCRIPTOR, NumChannels) FIELD(CUDA_ARRAY3D_DESCRIPTOR, Flags)  \
	SIZE(CUipcMemHandle) SAME(CUipcMemHandle, struct CUipcMemHandle_st)                \
	FIELD(CUipcMemHandle, reserved)                                                    \
	SIZE(cudaError_t) SCALAR(cudaError_t) SAME(cudaError_t, enum cudaError)            \
	CONST(cudaSuccess) CONST(cudaErrorInvalidValue) CONST(cudaErrorMemoryAllocation)   \
	CONST(cudaErrorInitializationError) CONST(cudaErrorNoDevice)                       \
	CONST(cudaErrorInvalidDevice) CONST(cudaErrorSymbolNotFound)                       \
	CONST(cudaErrorNotSupported) CONST(cudaErrorUnknown)                               \
	SAME(cudaStream_t, struct CUstream_st *)                                           \
	SAME(cudaMemPool_t, struct CUmemPoolHandle_st *)                                   \
	SAME(cudaArray_t, struct cudaArray *)                                              \
	SIZE(enum cudaChannelFormatKind) SCALAR(enum cudaChannelFormatKind)                \
	CONST(cudaChannelFormatKindSigned) CONST(cudaChannelFormatKindUnsigned)            \
	CONST(cudaChannelFormatKindFloat) CONST(cudaChannelFormatKindNone)                 \
	SIZE(struct cudaChannelFormatDesc) FIELD(struct cudaChannelFormatDesc, x)          \
	FIELD(struct cudaChannelFormatDesc, y) FIELD(struct cudaChannelFormatDesc, z)      \
	FIELD(struct cudaChannelFormatDesc, w) FIELD(struct cudaChannelFormatDesc, f)      \
	SIZE(struct cudaExtent) FIELD(struct cudaExtent, width)                            \
	FIELD(struct cudaExtent, height) FIELD(struct cudaExtent, depth)                   \
	SIZE(struct cudaPitchedPtr) FIELD(struct cudaPitchedPtr, ptr)                      \
	FIELD(struct cudaPitchedPtr, pitch) FIELD(struct cudaPitchedPtr, xsize)            \
	FIELD(struct cudaPitchedPtr, ysize)                                                \
	SIZE(cudaIpcMemHandle_t) SAME(cudaIpcMemHandle_t, struct cudaIpcMemHandle_st)      \
	FIELD(cudaIpcMemHandle_t, reserved)                                                \
	SIZE(enum cudaDriverEntryPointQueryResult)                                         \
	SCALAR(enum cudaDriverEntryPointQueryResult)                                       \
	CONST(cudaDriverEntryPointSuccess) CONST(cudaDriverEntryPointSymbolNotFound)       \
	CONST(cudaDriverEntryPointVersionNotSufficent)                                     \
	SIZE(enum cudaGetDriverEntryPointFlags) CONST(cudaEnableDefault)                   \
	CONST(cudaEnableLegacyStream) CONST(cudaEnablePerThreadDefaultStream)

/* tests/sim/sim-cuda.h, beyond cuda-types.h */
#define GMT_LAYOUT_SIM(SIZE, SCALAR, FIELD, CONST, CONSTX, SAME) \
	SIZE(CUmemAllocationGranularity_flags) SCALAR(CUmemAllocationGranularity_flags)             \
	SAME(CUmemAllocationGranularity_flags, enum CUmemAllocationGranularity_flags_enum)          \
	CONST(CU_MEM_ALLOC_GRANULARITY_MINIMUM) CONST(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)         \
	SIZE(CUmemAccess_flags) SCALAR(CUmemAccess_flags)                                           \
	SAME(CUmemAccess_flags, enum CUmemAccess_flags_enum)                                        \
	CONST(CU_MEM_ACCESS_FLAGS_PROT_NONE) CONST(CU_MEM_ACCESS_FLAGS_PROT_READ)                   \
	CONST(CU_MEM_ACCESS_FLAGS_PROT_READWRITE)                                                   \
	SIZE(CUmemAccessDesc) SAME(CUmemAccessDesc, struct CUmemAccessDesc_st)                      \
	FIELD(CUmemAccessDesc, location) FIELD(CUmemAccessDesc, flags)                              \
	SIZE(CUmemPoolProps) FIELD(CUmemPoolProps, allocType)                                       \
	FIELD(CUmemPoolProps, handleTypes) FIELD(CUmemPoolProps, location)                          \
	FIELD(CUmemPoolProps, win32SecurityAttributes) FIELD(CUmemPoolProps, maxSize)               \
	FIELD(CUmemPoolProps, usage) FIELD(CUmemPoolProps, reserved)                                \
	CONSTX(SIM_ERROR_HOST_MEMORY_ALREADY_REGISTERED, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) \
	CONSTX(SIM_ERROR_HOST_MEMORY_NOT_REGISTERED, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)         \
	CONSTX(SIM_ERROR_INVALID_IMAGE, CUDA_ERROR_INVALID_IMAGE)                                   \
	CONST(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)                                       \
	CONST(CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)                                             \
	CONST(CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)                                     \
	CONST(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) CONST(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)         \
	CONST(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) CONST(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)             \
	CONST(CU_MEMPOOL_ATTR_USED_MEM_HIGH) CONST(cudaMemPoolReuseFollowEventDependencies)          \
	CONST(cudaMemPoolReuseAllowOpportunistic) CONST(cudaMemPoolReuseAllowInternalDependencies)   \
	CONST(cudaMemPoolAttrReleaseThreshold) CONST(cudaMemPoolAttrReservedMemCurrent)              \
	CONST(cudaMemPoolAttrReservedMemHigh) CONST(cudaMemPoolAttrUsedMemCurrent)                   \
	CONST(cudaMemPoolAttrUsedMemHigh)                                   \
	CONST(CU_MEMHOSTALLOC_PORTABLE) CONST(CU_MEMHOSTALLOC_DEVICEMAP)                            \
	CONST(CU_MEMHOSTALLOC_WRITECOMBINED) CONST(CU_MEMHOSTREGISTER_PORTABLE)                     \
	CONST(CU_MEMHOSTREGISTER_DEVICEMAP) CONST(CU_MEMHOSTREGISTER_IOMEMORY)                      \
	CONST(CU_MEMHOSTREGISTER_READ_ONLY) CONST(CU_MEM_ATTACH_GLOBAL)                             \
	CONST(CU_MEM_ATTACH_HOST) CONST(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)                         \
	CONST(CU_STREAM_LEGACY) CONST(CU_STREAM_PER_THREAD)                                         \
	SIZE(enum cudaMemLocationType) SCALAR(enum cudaMemLocationType)                             \
	CONST(cudaMemLocationTypeInvalid) CONST(cudaMemLocationTypeDevice)                          \
	CONST(cudaMemLocationTypeHost)                                                              \
	SIZE(struct cudaMemLocation) FIELD(struct cudaMemLocation, type)                            \
	FIELD(struct cudaMemLocation, id)                                                           \
	SIZE(enum cudaMemAllocationType) SCALAR(enum cudaMemAllocationType)                         \
	CONST(cudaMemAllocationTypeInvalid) CONST(cudaMemAllocationTypePinned)                      \
	SIZE(enum cudaMemAllocationHandleType) SCALAR(enum cudaMemAllocationHandleType)             \
	CONST(cudaMemHandleTypeNone) CONST(cudaMemHandleTypePosixFileDescriptor)                    \
	SIZE(struct cudaMemPoolProps) FIELD(struct cudaMemPoolProps, allocType)                     \
	FIELD(struct cudaMemPoolProps, handleTypes) FIELD(struct cudaMemPoolProps, location)        \
	FIELD(struct cudaMemPoolProps, win32SecurityAttributes)                                     \
	FIELD(struct cudaMemPoolProps, maxSize) FIELD(struct cudaMemPoolProps, usage)               \
	FIELD(struct cudaMemPoolProps, reserved)                                                    \
	CONSTX(SIM_cudaErrorHostMemoryAlreadyRegistered, cudaErrorHostMemoryAlreadyRegistered)      \
	CONSTX(SIM_cudaErrorHostMemoryNotRegistered, cudaErrorHostMemoryNotRegistered)              \
	CONST(cudaHostAllocDefault) CONST(cudaHostAllocPortable) CONST(cudaHostAllocMapped)         \
	CONST(cudaHostRegisterDefault) CONST(cudaMemAttachGlobal) CONST(cudaMemAttachHost)          \
	CONST(cudaIpcMemLazyEnablePeerAccess) CONST(cudaStreamLegacy)                               \
	CONST(cudaStreamPerThread)
/* clang-format on */

#endif
