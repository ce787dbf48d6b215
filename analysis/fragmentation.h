/* The fragmentation report's figures for one trace, on what a driver-level
 * trace can know (docs/reports.md, "fragmentation"): per device the size
 * histogram, requested against granted (pitch padding, the driver's page
 * rounding as an estimate, cuMemCreate handles, stream-ordered requests),
 * the inventory of segments a caching allocator holds (count, size
 * classes, age) at the peak, at the end and at the first out-of-memory
 * failure; per process VMM reserved/mapped/physical and stream-ordered
 * allocations against pools. Free space inside a framework's cache makes
 * no driver call: it needs the framework's own counters (frag_counters). */
#ifndef GMT_ANALYSIS_FRAGMENTATION_H
#define GMT_ANALYSIS_FRAGMENTATION_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/fwhist.h"
#include "analysis/trace.h"

/* Segment size classes: PyTorch's caching allocator takes 2 MiB segments
 * for requests up to 1 MiB, 20 MiB ones up to 10 MiB, and rounds larger
 * requests up to 2 MiB (/work/shared/notes/frameworks.md, 1.2). */
enum frag_class {
	FRAG_SEG_2M,	  /* exactly 2 MiB */
	FRAG_SEG_20M,	  /* exactly 20 MiB */
	FRAG_SEG_2M_MULT, /* another multiple of 2 MiB */
	FRAG_SEG_OTHER,	  /* not a multiple of 2 MiB */
	FRAG_NCLASSES,
};
extern const char *const frag_class_key[FRAG_NCLASSES]; /* JSON: "2MiB"... */

/* The live segments of one device at one moment: its device allocations
 * that are not stream-ordered (what a caching allocator got from the
 * driver and holds, used or not). */
struct frag_segs {
	bool taken;
	uint64_t time_ns;
	uint64_t count, bytes;
	uint64_t class_count[FRAG_NCLASSES], class_bytes[FRAG_NCLASSES];
	uint64_t oldest_ns, median_age_ns; /* ages at time_ns */
};

/* Requested against granted for one kind of allocation. */
struct frag_grant {
	uint64_t count, requested, granted;
};

/* A framework's own view of its cache, which driver calls cannot give:
 * from the trace's COUNTERS (`run --framework-counters`, analysis/counters.h),
 * the reading at or before the device's peak (else the first after it). */
struct frag_counters {
	bool known;
	uint64_t reserved, allocated; /* free in the cache = reserved - allocated */
	const char *source;	      /* "torch.cuda.memory_stats()"... */
	const char *device_name;      /* the framework's: "cuda:0" */
	uint64_t time_ns;	      /* of the reading */
	bool has_split;
	uint64_t inactive_split; /* PyTorch: free bytes inside split blocks */
	uint64_t max_free;	 /* the most free in the cache over the readings */
	size_t readings;
};

struct frag_dev {
	int64_t ordinal;
	/* power-of-two buckets: [b] holds sizes in [2^b, 2^(b+1)); [64] size 0 */
	uint64_t hist_count[65], hist_bytes[65];
	uint64_t allocs, peak, peak_seq;
	struct frag_grant pitched; /* width * rows asked, pitch * rows granted */
	struct frag_grant pages;   /* other device allocations: frag_rounded, an estimate */
	struct frag_grant handles; /* cuMemCreate on the device: granted = created */
	uint64_t handles_2m;	   /* of which multiples of 2 MiB */
	struct frag_grant async;   /* stream-ordered: granted unknown (0) */
	struct frag_segs at_peak, at_end, at_oom;
	uint64_t oom_freed, oom_frees; /* the failing thread's frees after it */
	struct frag_counters counters;
	/* the framework's own blocks (run --framework-history): at its last
	 * snapshot and at its first OOM's */
	struct frag_blocks {
		bool known;
		uint64_t time_ns, seq;
		int reason; /* GMT_FWSNAP_WHY_* */
		struct fw_blocks_fig fig;
	} blocks_last, blocks_oom;
};

struct frag_vmm {
	uint64_t reserved, mapped, physical; /* at the end */
	uint64_t reserved_peak, mapped_peak, physical_peak;
	bool used;
};

struct frag_result {
	struct frag_dev *devs; /* by ordinal */
	size_t ndevs;
	struct frag_vmm vmm;
	uint64_t async_live, async_peak, pools_created, pool_trims;
};

/* A process's figures, for the totals over several traces. */
struct frag_total {
	uint64_t peak_live, waste, segments, segment_bytes; /* at each device's peak */
};

/* Two replays of `t` (only device `device` when has_device). Returns the
 * trace's exit code, or -1; `out` is filled either way (frag_free it). */
int frag_compute(struct trace *t, bool has_device, int64_t device, struct frag_result *out);
void frag_free(struct frag_result *r);
void frag_totals(const struct frag_result *r, struct frag_total *tot);

/* The size rounded up to the allocation granularity the driver is thought
 * to use (2 MiB above 1 MiB, 512 B otherwise; not reported by it). */
uint64_t frag_rounded(uint64_t size);
/* Pitch padding plus the estimated page rounding of one device. */
uint64_t frag_waste(const struct frag_dev *d);
/* Whether the segment sizes look like PyTorch's caching allocator: most
 * segments 2 MiB multiples, and some exactly 2 or 20 MiB. */
bool frag_pytorch_like(const struct frag_segs *s);
/* a / b, 0 when b is 0. */
double frag_ratio(uint64_t a, uint64_t b);

#endif
