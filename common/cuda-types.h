/* Our own declarations of the CUDA driver and runtime types the hooks touch.
 *
 * We never include the toolkit's headers: the library must build without it.
 * tests/cuda-decls/ compiles these against cuda.h and cuda_runtime_api.h
 * (sizes, offsets, enum values) and the hook signatures in cuda-api.h against
 * the toolkit's prototypes, so a wrong declaration fails the build there.
 *
 * Names match the toolkit's so the hooks read like CUDA code. Only the
 * fields the tracer reads are spelled out; other structs stay opaque. */
#ifndef GMT_CUDA_TYPES_H
#define GMT_CUDA_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* ---- driver ---- */
typedef enum cudaError_enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_DEINITIALIZED = 4,
	CUDA_ERROR_STUB_LIBRARY = 34,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_NOT_SUPPORTED = 801,
	CUDA_ERROR_UNKNOWN = 999
} CUresult;

typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef uint64_t cuuint64_t;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUarray_st *CUarray;
typedef struct CUmemPoolProps_st CUmemPoolProps;	   /* opaque: never read */
typedef struct CUexecAffinityParam_st CUexecAffinityParam; /* opaque: never read */
typedef struct CUctxCreateParams_st CUctxCreateParams;	   /* opaque: never read */

typedef enum CUdriverProcAddressQueryResult_enum {
	CU_GET_PROC_ADDRESS_SUCCESS = 0,
	CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
	CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

enum CUdriverProcAddress_flags_enum {
	CU_GET_PROC_ADDRESS_DEFAULT = 0,
	CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1,
	CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2
};

typedef enum CUdevice_attribute_enum {
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
} CUdevice_attribute;

typedef struct CUuuid_st {
	char bytes[16];
} CUuuid;

typedef enum CUmemLocationType_enum {
	CU_MEM_LOCATION_TYPE_INVALID = 0,
	CU_MEM_LOCATION_TYPE_DEVICE = 1,
	CU_MEM_LOCATION_TYPE_HOST = 2,
	CU_MEM_LOCATION_TYPE_HOST_NUMA = 3,
	CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 4
} CUmemLocationType;

typedef enum CUmemAllocationType_enum {
	CU_MEM_ALLOCATION_TYPE_INVALID = 0,
	CU_MEM_ALLOCATION_TYPE_PINNED = 1
} CUmemAllocationType;

typedef enum CUmemAllocationHandleType_enum {
	CU_MEM_HANDLE_TYPE_NONE = 0,
	CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1,
	CU_MEM_HANDLE_TYPE_WIN32 = 2,
	CU_MEM_HANDLE_TYPE_WIN32_KMT = 4,
	CU_MEM_HANDLE_TYPE_FABRIC = 8
} CUmemAllocationHandleType;

typedef struct CUmemLocation_st {
	CUmemLocationType type;
	int id;
} CUmemLocation;

typedef struct CUmemAllocationProp_st {
	CUmemAllocationType type;
	CUmemAllocationHandleType requestedHandleTypes;
	CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} CUmemAllocationProp;

typedef enum CUarray_format_enum {
	CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
	CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
	CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
	CU_AD_FORMAT_SIGNED_INT8 = 0x08,
	CU_AD_FORMAT_SIGNED_INT16 = 0x09,
	CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
	CU_AD_FORMAT_HALF = 0x10,
	CU_AD_FORMAT_FLOAT = 0x20
} CUarray_format;

typedef struct CUDA_ARRAY_DESCRIPTOR_st {
	size_t Width;
	size_t Height;
	CUarray_format Format;
	unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR;

typedef struct CUDA_ARRAY3D_DESCRIPTOR_st {
	size_t Width;
	size_t Height;
	size_t Depth;
	CUarray_format Format;
	unsigned int NumChannels;
	unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR;

typedef struct CUipcMemHandle_st {
	char reserved[64];
} CUipcMemHandle;

/* ---- runtime ---- */
typedef enum cudaError {
	cudaSuccess = 0,
	cudaErrorInvalidValue = 1,
	cudaErrorMemoryAllocation = 2,
	cudaErrorInitializationError = 3,
	cudaErrorNoDevice = 100,
	cudaErrorInvalidDevice = 101,
	cudaErrorSymbolNotFound = 500,
	cudaErrorNotSupported = 801,
	cudaErrorUnknown = 999
} cudaError_t;

typedef struct CUstream_st *cudaStream_t;
typedef struct CUmemPoolHandle_st *cudaMemPool_t;
typedef struct cudaArray *cudaArray_t;
struct cudaMemPoolProps; /* opaque: never read */

enum cudaChannelFormatKind {
	cudaChannelFormatKindSigned = 0,
	cudaChannelFormatKindUnsigned = 1,
	cudaChannelFormatKindFloat = 2,
	cudaChannelFormatKindNone = 3
};

struct cudaChannelFormatDesc {
	int x;
	int y;
	int z;
	int w;
	enum cudaChannelFormatKind f;
};

struct cudaExtent {
	size_t width;
	size_t height;
	size_t depth;
};

struct cudaPitchedPtr {
	void *ptr;
	size_t pitch;
	size_t xsize;
	size_t ysize;
};

typedef struct cudaIpcMemHandle_st {
	char reserved[64];
} cudaIpcMemHandle_t;

enum cudaDriverEntryPointQueryResult {
	cudaDriverEntryPointSuccess = 0,
	cudaDriverEntryPointSymbolNotFound = 1,
	cudaDriverEntryPointVersionNotSufficent = 2
};

enum cudaGetDriverEntryPointFlags {
	cudaEnableDefault = 0x0,
	cudaEnableLegacyStream = 0x1,
	cudaEnablePerThreadDefaultStream = 0x2
};

#endif
