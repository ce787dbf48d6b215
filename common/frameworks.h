/* The frameworks and CUDA libraries gpumemtrace knows, as one table: what
 * each one's libraries are called, the symbols of its allocator, whether
 * it carries a static CUDA runtime, its name in reports, and the
 * environment variables that shape its memory. Data only.
 *
 * Everything that asks "which framework is this?" derives from it: the
 * site rules (analysis/sites.c), explain's recognition, accounting's
 * routes, diff's library and allocator rows, oom's blind spots, the
 * counters' sources, and the variables the library records
 * (preload/procinfo.c). docs/reports.md's tables are generated from it
 * (make gen-docs; t-cli-options-drift fails on drift).
 *
 * Adding a framework or library: a row in gmt_frameworks (common/
 * frameworks.c) with its id here, and its variables in gmt_fw_env. */
#ifndef GMT_COMMON_FRAMEWORKS_H
#define GMT_COMMON_FRAMEWORKS_H

#include <stdbool.h>
#include <stddef.h>

/* The rows, in the table's order. */
enum gmt_fw_id {
	GMT_FW_NONE, /* no row: the user's code, or a variable of the job's launcher */
	GMT_FW_PYTORCH,
	GMT_FW_TENSORFLOW,
	GMT_FW_JAX,
	GMT_FW_XLA,
	GMT_FW_CUPY,
	GMT_FW_NCCL,
	GMT_FW_CUBLAS,
	GMT_FW_CUDNN,
	GMT_FW_CUFFT,
	GMT_FW_CURAND,
	GMT_FW_CUSPARSE,
	GMT_FW_CUSOLVER,
	GMT_FW_CUFILE,
	GMT_FW_CUPTI,
	GMT_FW_NVRTC,
	GMT_FW_NVJITLINK,
	GMT_FW_NVSHMEM,
	GMT_FW_NVTX,
	GMT_FW_NPP,
	GMT_FW_NVJPEG,
	GMT_FW_CUTENSOR,
	GMT_FW_TENSORRT,
	GMT_FW_MAGMA,
	GMT_FW_CUDA_DRIVER,
	GMT_FW_CUDA_RUNTIME,
	GMT_FW_TRACER,
	GMT_FW_COUNT
};

enum gmt_fw_kind {
	GMT_FWK_FRAMEWORK, /* a framework with its own allocator (PyTorch, JAX, TF, CuPy) */
	GMT_FWK_LIBRARY,   /* a CUDA library a framework or program calls (NCCL, cuBLAS...) */
	GMT_FWK_CUDA	   /* the CUDA driver and runtime, and the tracer itself */
};

struct gmt_framework {
	const char *key;  /* "pytorch": the site rule of its modules (--json's skipped_by) */
	const char *name; /* "PyTorch": its name in reports */
	enum gmt_fw_kind kind;
	/* Its code, NULL-ended glob lists: on a module's file name, on its
	 * path, and (recognition only) on a file name too loose to pass the
	 * module's frames over as the framework's ("*cupy*": CuPy is loaded;
	 * a program named after it stays the user's). */
	const char *const *modules, *const *paths, *const *loose;
	/* The module that says its CUDA side is loaded (explain names it) */
	const char *const *cuda_modules;
	/* Its allocator's symbols, for a framework linked statically into one
	 * binary, and their site rule ("pytorch-allocator") */
	const char *alloc_rule;
	const char *const *alloc_symbols;
	/* Symbols inside its libraries that are glue, passed over like the
	 * interpreter (the autograd engine), and their rule */
	const char *glue_rule;
	const char *const *glue_symbols;
	/* Carries a static CUDA runtime: its allocations reach the driver
	 * through cuGetProcAddress, never through libcudart */
	bool static_runtime;
	/* Allocates memory of its own beside the framework's pool (NCCL's
	 * buffers, cuBLAS's and cuDNN's workspaces): explain counts it apart */
	bool own_memory;
	/* The file names diff compares (their version), as "libcublas" for
	 * libcublas.so.13 and libcublas-1a2b.so.13 */
	const char *const *versioned;
	/* The Python package its counters come from ("torch": the COUNTERS
	 * record's source) and the call that reads them */
	const char *python, *counters_api;
};

/* Indexed by enum gmt_fw_id; row GMT_FW_NONE is empty (key NULL). */
extern const struct gmt_framework gmt_frameworks[GMT_FW_COUNT];

/* How the library records a variable. */
enum gmt_env_how {
	GMT_ENV_NAME,	   /* this variable */
	GMT_ENV_PREFIX,	   /* every variable that starts with it (at most GMT_ENV_PREFIXED) */
	GMT_ENV_IN_PREFIX, /* recorded by a prefix row: named here for the reports */
};
#define GMT_ENV_PREFIXED 32

/* An environment variable that shapes GPU memory, or says which process
 * of a job this is, who reads it, what it changes and where that is
 * documented or read (docs/settings.md is generated from these rows). */
struct gmt_fw_env {
	enum gmt_fw_id fw;
	const char *name;
	enum gmt_env_how how;
	bool shown;	     /* diff's "allocator environment" shows it, set or not */
	const char *current; /* an older name: the name that replaces it, else NULL */
	bool read_first;     /* an older name: read when both are set (else both is an error) */
	const char *what;    /* what it changes (NULL: a job's rank, not memory) */
	const char *source;
};
extern const struct gmt_fw_env gmt_fw_env[];
extern const size_t gmt_fw_nenv;
/* An upper bound of the rows recorded by name (a test holds it) */
#define GMT_ENV_NAMED_MAX 64

#endif
