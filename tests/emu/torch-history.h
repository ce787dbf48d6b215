/* PyTorch's allocator history, emulated (EMU_HISTORY=1): what `gpumemtrace
 * run --framework-history` records from a real PyTorch. The helper
 * (python/gpumemtrace/_counters/sitecustomize.py) turns on
 * torch.cuda.memory._record_memory_history(context="all", stacks="python")
 * and at exit writes torch.cuda.memory._snapshot() through the library's
 * gpumemtrace_fw_* entry points (include/gpumemtrace/gpumemtrace.h). Here
 * the allocator model's trace callback gives each entry as PyTorch's
 * record_trace would (framework-view.md §1.2: alloc with the requested
 * size, free_requested, free_completed, segment_alloc/free, segment_map/
 * unmap, oom with the device's free bytes), stamped with the wall clock in
 * microseconds (time_us) and the Python stack the emulated script is at
 * (emu_history_site, per thread: backward runs on the autograd thread) on
 * allocations and OOMs (PyTorch records the frees' stacks too; no report
 * reads them).
 * At each OOM (the observer) and at exit: a snapshot, its new entries of
 * device 0, and the segments with their blocks (each allocated block with
 * its allocation's stack), as the helper writes them. Nothing without EMU_HISTORY, as a run
 * without --framework-history. */
#ifndef EMU_TORCH_HISTORY_H
#define EMU_TORCH_HISTORY_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/* A Python frame of the emulated script, and a stack of them (innermost
 * first). */
struct emu_frame {
	const char *function, *file;
	uint64_t line;
};
#define EMU_STACK_MAX 4
struct emu_site {
	int n, frames[EMU_STACK_MAX];
};

/* A block of the allocator's state at exit (its segments', in address
 * order; seg_start: the first block of a segment, or of an expandable
 * segment's mapped range). */
struct emu_hist_block {
	uint64_t ptr, size, requested, stream;
	bool allocated, pending, small, expandable, seg_start;
};

/* Before the allocator's first entry: the script's frames and stacks. */
void emu_history_init(const struct emu_frame *frames, size_t nframes, const struct emu_site *sites,
		      size_t nsites);
bool emu_history_on(void);
/* The emulated script is at sites[site] on this thread. */
void emu_history_site(int site);
/* One entry (GMT_FW_* action numbers, which are PyTorch's order), under the
 * allocator's lock. */
void emu_history_entry(unsigned action, uint64_t addr, uint64_t size, uint64_t stream);
/* A snapshot, as the helper writes torch.cuda.memory._snapshot() at an
 * OOM (reason GMT_FWSNAP_WHY_OOM, from the observer) or at exit: the
 * entries no earlier one wrote. blocks: the allocator's state then; conf:
 * PYTORCH_CUDA_ALLOC_CONF. */
void emu_history_write(unsigned reason, const struct emu_hist_block *blocks, size_t n,
		       const char *conf, uint64_t max_entries);

#endif
