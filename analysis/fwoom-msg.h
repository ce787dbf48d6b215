/* A framework's out-of-memory message, read into its figures: PyTorch's
 * "CUDA out of memory. Tried to allocate ..." (every form since 1.x),
 * XLA's RESOURCE_EXHAUSTED texts (JAX, XLA-compiled TensorFlow),
 * TensorFlow's "OOM when allocating tensor ..." and CuPy's "Out of memory
 * allocating ...". One parse per message, anchored on the phrases each
 * framework has kept across versions (/work/shared/notes/framework-view.md
 * §2.2, §3.2, §4, §5); a phrase missing leaves its figure unknown. */
#ifndef GMT_ANALYSIS_FWOOM_MSG_H
#define GMT_ANALYSIS_FWOOM_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A size a message states, and how far the printed figure may be from the
 * true one: PyTorch's "20.00 MiB" is within 0.005 MiB. */
struct fw_size {
	uint64_t bytes, err;
	bool known;
};

/* Which form the message has: the parser that read it. */
enum fwmsg_form {
	FWMSG_NONE,	   /* no out-of-memory message we know */
	FWMSG_TORCH,	   /* 2.1+: "Tried to allocate A. GPU d has a total capacity of T ..." */
	FWMSG_TORCH_1X,	   /* "Tried to allocate A (GPU d; T total capacity; ...)" */
	FWMSG_TORCH_HUGE,  /* "Tried to allocate more than 1EB memory." */
	FWMSG_TORCH_ASYNC, /* backend:cudaMallocAsync's "would exceed allowed memory" */
	FWMSG_CUDA_ERROR,  /* "CUDA error: out of memory": the driver's own (no cache) */
	FWMSG_HOST,	   /* host memory: DefaultCPUAllocator, "Out of host memory", TF's cpu */
	FWMSG_XLA,	   /* "Out of memory while trying to allocate N bytes." */
	FWMSG_XLA_REQUEST, /* "Failed to allocate request for H (NB) on device ordinal d" */
	FWMSG_TF,   /* "OOM when allocating tensor with shape[..] and type T on D by allocator A" */
	FWMSG_CUPY, /* "Out of memory allocating N bytes (allocated so far: M bytes ...)." */
	FWMSG_NFORMS
};
/* "torch", "torch-1.x"...: the --json names */
extern const char *const fwmsg_form_name[FWMSG_NFORMS];

#define FWMSG_MAX_PROCS 8
#define FWMSG_MAX_TEXT	16384 /* the part of a message read; the rest is ignored */

struct fwmsg_proc {
	uint32_t pid;
	struct fw_size bytes;
};

struct fwmsg {
	enum fwmsg_form form;
	int device; /* -1: not stated */
	/* what was asked: PyTorch's rounded block A, XLA's and CuPy's N,
	 * TensorFlow's shape x type */
	struct fw_size requested;
	struct fw_size total, free_bytes; /* T, F: cudaMemGetInfo's */
	/* PyTorch: B, the memory fraction's limit ("allowed"; the async
	 * backend's "PyTorch limit"); CuPy: L, "limit set to" */
	struct fw_size limit;
	/* PyTorch: P, allocated by PyTorch (1.x "already allocated"; async
	 * "Currently allocated"); G, private pools' cached blocks; R, reserved
	 * but unallocated (1.x: reserved in total - P) */
	struct fw_size allocated, private_pools, unallocated;
	struct fw_size reserved;      /* PyTorch 1.x: "reserved in total by PyTorch" */
	struct fw_size held;	      /* CuPy: M, the pool's bytes from the driver */
	struct fw_size self;	      /* "this process has X memory in use" (NVML) */
	struct fw_size program_total; /* XLA: BufferAssignment's total allocation */
	/* "Process {pid} has X memory in use": other processes (NVML) */
	struct fwmsg_proc procs[FWMSG_MAX_PROCS];
	size_t nprocs, procs_total;
	struct fw_size others; /* the sum of every such clause */
	/* TensorFlow's tensor */
	char shape[128], dtype[32], where[128], allocator[64];
};

/* Reads `len` bytes of msg (it needs no NUL). Returns out->form. */
enum fwmsg_form fwmsg_parse(const char *msg, size_t len, struct fwmsg *out);

#endif
