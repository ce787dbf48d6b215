/* What nvidia-smi showed for this process, per device, as `check --max-smi`
 * gates it: NVML's per-process peak where the tracer sampled it (and it is
 * consistent: not above the device's total), else an estimate from the
 * trace: the traced device bytes at their peak + the contexts and module
 * code live then (accounting) + the stream-ordered pool's reserve (the
 * most its allocations reached, less what was live of them at that peak:
 * a pool keeps freed memory, frameworks.md §1.6, §5). And the framework's
 * own reserved peak, from its counters (run --framework-counters). */
#ifndef GMT_ANALYSIS_SMI_FOOTPRINT_H
#define GMT_ANALYSIS_SMI_FOOTPRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/trace.h"

enum smi_source { SMI_NVML, SMI_ESTIMATE };

struct smi_footprint {
	int64_t device;
	uint64_t bytes; /* the gated figure */
	enum smi_source source;
	size_t nvml_samples;			 /* with this process's figure */
	uint64_t nvml_dropped;			 /* an NVML peak above the total: not used */
	uint64_t traced, contexts, pool_reserve; /* the estimate's parts */
	/* the framework's reserved peak (PyTorch reserved, JAX pool bytes) */
	bool fw_known;
	uint64_t fw_reserved;
	const char *fw_api; /* "torch.cuda.memory_stats()" */
};

/* One entry per device the trace knows, in ordinal order (*out malloc'd).
 * Returns -1, or a read error's exit code. */
int smi_footprint(struct trace *t, struct smi_footprint **out, size_t *n);
/* "NVML's per-process peak (12 samples)", "estimate: ...", into buf. */
const char *smi_source_text(const struct smi_footprint *s, char *buf, size_t size);

#endif
