/* A trace's framework out-of-memory errors (FWOOM records, written by the
 * helper of `run --framework-counters`) as one list: PyTorch's observer
 * record and the record of the same error reaching the top of a thread are
 * one error; each gets the figures its records and its message hold, named
 * alike for every framework. analysis/oom.c joins them to the driver's
 * failures and judges their case (oom-judge.c). */
#ifndef GMT_ANALYSIS_FWOOM_H
#define GMT_ANALYSIS_FWOOM_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/fwoom-msg.h"
#include "analysis/trace.h"

#define FWOOM_MAX 256 /* errors kept; the rest are counted */

enum fwoom_fw { FWF_OTHER, FWF_TORCH, FWF_JAX, FWF_TF, FWF_CUPY };

/* The framework's limit below the device: its bytes, what set it with its
 * value ("torch.cuda.set_per_process_memory_fraction(0.50)",
 * "XLA_PYTHON_CLIENT_MEM_FRACTION=0.6", "CUPY_GPU_MEMORY_LIMIT=1073741824"),
 * and the knob that changes it. */
struct fwoom_limit {
	struct fw_size bytes;
	char what[200];
	const char *knob;
};

struct fwoom {
	const struct trace_fwoom *observer; /* PyTorch's observer saw it, or NULL */
	const struct trace_fwoom *raised;   /* it reached the top of a thread, or NULL */
	enum fwoom_fw fw;
	const char *source, *type; /* the records': "torch", "torch.OutOfMemoryError" */
	int64_t device;		   /* -1: unknown */
	int tid;
	uint64_t time_ns; /* the first record's */
	struct fwmsg msg; /* raised's message (form FWMSG_NONE without one) */
	/* The figures (known: from a record's values or the message; a
	 * record's exact value wins over the message's rounded one):
	 * request   what the allocator asked (PyTorch: the rounded block);
	 * total     the device's total; free_bytes: free on it (cudaMemGetInfo);
	 * in_use    the framework's tensors (PyTorch allocated, BFC in use,
	 *           TF current, CuPy used_bytes);
	 * pool      what it holds from the driver (PyTorch reserved, BFC
	 *           pool_bytes, CuPy total_bytes);
	 * pool_free free inside it: PyTorch's "reserved but unallocated", else
	 *           pool - in_use;
	 * largest_free the largest free block in it (BFC);
	 * self, others what NVML said this process and the others held. */
	struct fw_size request, total, free_bytes, in_use, pool, pool_free, largest_free;
	struct fw_size self, others;
	struct fwoom_limit limit; /* bytes.known: a limit below the device was set */
	bool host;		  /* host memory, not the GPU's */
	/* set by analysis/oom.c: the program caught it and went on (only the
	 * observer saw it, and the process did not end abnormally after it) */
	bool caught;
	/* an error from PyTorch's allocator history (fwoom_from_history) whose
	 * cache figures are the blocks of the snapshot its OOM observer took
	 * (fwoom_history_blocks) */
	bool blocks;
};

struct fwoom_list {
	struct fwoom *v;
	size_t n;
	uint64_t total; /* errors found, kept or not */
};

/* The errors of t, in time order, with their figures (the device's total
 * from its DEVICE record when no record states it). */
void fwoom_collect(const struct trace *t, struct fwoom_list *out);
void fwoom_free(struct fwoom_list *l);
/* Where t has no FWOOM record (a snapshot pickle, a history recorded
 * without the counters' helper), its allocator history's oom entries as
 * PyTorch observer records, with the figures the history holds then
 * (request, device free, reserved, tensors' bytes): oom_compute calls it. */
void fwoom_add_history(struct trace *t);
/* Such a record's last value: the history's allocations on its device
 * after it (0: the history ends in it, so it is not taken as caught). */
#define FWOOM_HIST_AFTER "history.allocations_after"
/* Whether f comes from a history's oom entry; one that the history ends in. */
bool fwoom_from_history(const struct fwoom *f);
bool fwoom_history_ended(const struct fwoom *f);
/* For each such error with a snapshot taken for it (run --framework-history:
 * the observer's, on its device, before the device's next error), the cache
 * as its blocks show it: reserved, the blocks in use, free in the cache (its
 * inactive blocks: what the allocator could not use) and the largest free
 * block of the request's pool; blocks set. fwoom_collect first. */
void fwoom_history_blocks(const struct trace *t, struct fwoom_list *l);
/* "PyTorch", "JAX", "TensorFlow", "CuPy", or the record's source. */
const char *fwoom_fw_name(const struct fwoom *f);

#endif
