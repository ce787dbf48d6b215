/* Declarations shared by the simulated CUDA (tests/sim) and the test
 * programs (tests/progs): common/cuda-types.h plus the few types, constants
 * and prototypes the tracer itself never needs.
 *
 * Names and layouts are the toolkit's, so the programs read like ordinary
 * CUDA code; tests/cuda-decls checks every one against cuda.h and
 * cuda_runtime_api.h. Two structs that cuda-types.h keeps opaque (pool
 * properties) are completed here. Constants are #ifndef-guarded so a later
 * addition to cuda-types.h cannot clash with them. */
#ifndef SIM_CUDA_H
#define SIM_CUDA_H

#include "common/cuda-types.h"
#include "common/cuda-api.h"
#include "sim-api.h"

/* ---- driver types and constants ---- */
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;

typedef enum CUmemAllocationGranularity_flags_enum {
	CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
	CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1
} CUmemAllocationGranularity_flags;

typedef enum CUmemAccess_flags_enum {
	CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
	CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
	CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3
} CUmemAccess_flags;

typedef enum CUmemPool_attribute_enum {
	CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,
	CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC = 2,
	CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3,
	CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
	CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5,
	CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH = 6,
	CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7,
	CU_MEMPOOL_ATTR_USED_MEM_HIGH = 8
} CUmemPool_attribute;

enum cudaMemPoolAttr {
	cudaMemPoolReuseFollowEventDependencies = 1,
	cudaMemPoolReuseAllowOpportunistic = 2,
	cudaMemPoolReuseAllowInternalDependencies = 3,
	cudaMemPoolAttrReleaseThreshold = 4,
	cudaMemPoolAttrReservedMemCurrent = 5,
	cudaMemPoolAttrReservedMemHigh = 6,
	cudaMemPoolAttrUsedMemCurrent = 7,
	cudaMemPoolAttrUsedMemHigh = 8
};

typedef struct CUmemAccessDesc_st {
	CUmemLocation location;
	CUmemAccess_flags flags;
} CUmemAccessDesc;

/* cuda-types.h declares `typedef struct CUmemPoolProps_st CUmemPoolProps`
 * without a body (the tracer never reads it); the programs must fill one. */
struct CUmemPoolProps_st {
	CUmemAllocationType allocType;
	CUmemAllocationHandleType handleTypes;
	CUmemLocation location;
	void *win32SecurityAttributes;
	size_t maxSize;
	unsigned short usage;
	unsigned char reserved[54];
};

/* CUresult values outside cuda-types.h's enum. */
#define SIM_ERROR_HOST_MEMORY_ALREADY_REGISTERED ((CUresult)712)
#define SIM_ERROR_HOST_MEMORY_NOT_REGISTERED	 ((CUresult)713)
#define SIM_ERROR_INVALID_IMAGE			 ((CUresult)200)

#ifndef CU_MEMHOSTALLOC_PORTABLE
#define CU_MEMHOSTALLOC_PORTABLE 0x01
#endif
#ifndef CU_MEMHOSTALLOC_DEVICEMAP
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#endif
#ifndef CU_MEMHOSTALLOC_WRITECOMBINED
#define CU_MEMHOSTALLOC_WRITECOMBINED 0x04
#endif
#ifndef CU_MEMHOSTREGISTER_PORTABLE
#define CU_MEMHOSTREGISTER_PORTABLE 0x01
#endif
#ifndef CU_MEMHOSTREGISTER_DEVICEMAP
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x02
#endif
#ifndef CU_MEMHOSTREGISTER_IOMEMORY
#define CU_MEMHOSTREGISTER_IOMEMORY 0x04
#endif
#ifndef CU_MEMHOSTREGISTER_READ_ONLY
#define CU_MEMHOSTREGISTER_READ_ONLY 0x08
#endif
#ifndef CU_MEM_ATTACH_GLOBAL
#define CU_MEM_ATTACH_GLOBAL 0x1
#endif
#ifndef CU_MEM_ATTACH_HOST
#define CU_MEM_ATTACH_HOST 0x2
#endif
#ifndef CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1
#endif
#ifndef CU_STREAM_LEGACY
#define CU_STREAM_LEGACY ((CUstream)0x1)
#endif
#ifndef CU_STREAM_PER_THREAD
#define CU_STREAM_PER_THREAD ((CUstream)0x2)
#endif

/* ---- runtime types and constants ---- */
enum cudaMemLocationType {
	cudaMemLocationTypeInvalid = 0,
	cudaMemLocationTypeDevice = 1,
	cudaMemLocationTypeHost = 2
};

struct cudaMemLocation {
	enum cudaMemLocationType type;
	int id;
};

enum cudaMemAllocationType {
	cudaMemAllocationTypeInvalid = 0x0,
	cudaMemAllocationTypePinned = 0x1
};

enum cudaMemAllocationHandleType {
	cudaMemHandleTypeNone = 0x0,
	cudaMemHandleTypePosixFileDescriptor = 0x1
};

/* Completes cuda-types.h's opaque declaration, like CUmemPoolProps_st. */
struct cudaMemPoolProps {
	enum cudaMemAllocationType allocType;
	enum cudaMemAllocationHandleType handleTypes;
	struct cudaMemLocation location;
	void *win32SecurityAttributes;
	size_t maxSize;
	unsigned short usage;
	unsigned char reserved[54];
};

#define SIM_cudaErrorHostMemoryAlreadyRegistered ((cudaError_t)712)
#define SIM_cudaErrorHostMemoryNotRegistered	 ((cudaError_t)713)

#ifndef cudaHostAllocDefault
#define cudaHostAllocDefault 0x00
#endif
#ifndef cudaHostAllocPortable
#define cudaHostAllocPortable 0x01
#endif
#ifndef cudaHostAllocMapped
#define cudaHostAllocMapped 0x02
#endif
#ifndef cudaHostRegisterDefault
#define cudaHostRegisterDefault 0x00
#endif
#ifndef cudaMemAttachGlobal
#define cudaMemAttachGlobal 0x01
#endif
#ifndef cudaMemAttachHost
#define cudaMemAttachHost 0x02
#endif
#ifndef cudaIpcMemLazyEnablePeerAccess
#define cudaIpcMemLazyEnablePeerAccess 0x01
#endif
#ifndef cudaStreamLegacy
#define cudaStreamLegacy ((cudaStream_t)0x1)
#endif
#ifndef cudaStreamPerThread
#define cudaStreamPerThread ((cudaStream_t)0x2)
#endif

/* ---- prototypes: every export of the simulated libcuda and libcudart ---- */
#define SIM_DECLARE_DRIVER_(name, base, params)	 CUresult name params;
#define SIM_DECLARE_RUNTIME_(name, base, params) cudaError_t name params;
GMT_DRIVER_HOOKS(SIM_DECLARE_DRIVER_)
GMT_DRIVER_HOOKS_LEGACY(SIM_DECLARE_DRIVER_)
GMT_DRIVER_USED(SIM_DECLARE_DRIVER_)
SIM_DRIVER_EXTRA(SIM_DECLARE_DRIVER_)
SIM_DRIVER_OLD(SIM_DECLARE_DRIVER_)
GMT_RUNTIME_HOOKS(SIM_DECLARE_RUNTIME_)
SIM_RUNTIME_EXTRA(SIM_DECLARE_RUNTIME_)
#undef SIM_DECLARE_DRIVER_
#undef SIM_DECLARE_RUNTIME_
const char *cudaGetErrorString(cudaError_t error);

/* The simulated driver's version (cuDriverGetVersion). */
#define SIM_DRIVER_VERSION 13000

#endif
