/* A PyTorch allocator history replayed through the caching allocator's
 * model (model/torchalloc.h): replay's fidelity and whatif's plan.
 *
 * The history is a trace's framework history (analysis/fwhist.h: recorded
 * by `run --framework-history`, or a snapshot pickle read as a trace): the
 * last snapshot's segments and blocks, the settings, each device's
 * entries. Per device, independently (each device has an allocator of its
 * own):
 *   - what was live before the history's first entry is rebuilt from the
 *     segments and blocks at its end and the frees of what it never
 *     allocated (as memory_viz does);
 *   - "follow": every recorded request goes through the model, which says
 *     what it would take (a cached block, or a new segment of some size),
 *     then takes what the allocator took, so one difference never hides
 *     the next. Fidelity: the share of allocations where the two agree;
 *     the first that differs is named;
 *   - "free run": the requests alone through a fresh model, under the
 *     recorded settings (replay) or others (whatif), on a device of the
 *     recorded size (or one given). Segment frees in the record are
 *     empty_cache() calls where nothing allocated right after them (the
 *     program's), and left to the model where a new segment followed (the
 *     allocator's own OOM retry or garbage collection) when it knows the
 *     device's size.
 * What the model cannot know: frees on other streams that wait for
 * events (replayed when the history says they completed), CUDA graphs'
 * private pools (their segments are replayed, not modelled), the time
 * empty_cache is called (as recorded). */
#ifndef GMT_ANALYSIS_ALLOCREPLAY_H
#define GMT_ANALYSIS_ALLOCREPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/torchalloc.h"

struct trace;
struct fw_snapshot;

/* What the model, or the allocator, did for one request. */
struct ar_choice {
	bool new_segment; /* else a cached block */
	uint64_t ptr;	  /* the block's address (a new expandable mapping: where it begins) */
	uint64_t size;	  /* a new segment's (or mapping's) bytes */
};

/* The first request where the model and the allocator differ. */
struct ar_divergence {
	bool found;
	uint64_t entry;	  /* its index in its device's history */
	uint64_t time_us; /* 0: none */
	uint64_t request, stream;
	struct ar_choice model, recorded;
	char stack[512]; /* its frames, innermost first: "forward (model.py:42) <- ..." */
};

/* One free run's figures. */
struct ar_run {
	uint64_t reserved_peak, allocated_peak;
	uint64_t segments_at_peak;
	uint64_t free_at_peak; /* reserved - allocated at the reserved peak */
	uint64_t largest_free_at_peak;
	uint64_t ooms;		    /* requests the model could not serve */
	uint64_t first_oom_request; /* the first of them */
	uint64_t ooms_recorded;	    /* of ooms: requests the allocator refused too */
	uint64_t empty_caches;	    /* empty_cache() calls replayed */
};

/* The snapshot's end, from its segments and blocks: the figures
 * _memory_viz.py stats prints (its "allocated" is requested_bytes, its
 * free all the rest: inactive, pending and the rounding inside tensors). */
struct ar_end {
	uint64_t segments, reserved;
	uint64_t allocated, requested; /* active_allocated blocks: size, asked */
	uint64_t pending;	       /* active_pending_free blocks */
	uint64_t inactive;	       /* free blocks in the cache */
};

/* The history's first oom entry: the allocator gave up on a request. */
struct ar_oom {
	bool found;
	uint64_t entry, time_us;
	uint64_t request, device_free, stream;
	char stack[512];
};

struct ar_device {
	int64_t device;
	uint64_t device_size; /* the free runs' device: 0 unknown */
	int size_source;      /* 0 none, 1 given, 2 the trace's DEVICE, 3 estimated from an oom */
	uint64_t entries, allocs, frees;
	/* follow */
	uint64_t same, same_cached, same_new, differ, unfollowed;
	/* of differ: two cached blocks, both in segments reserved before the
	 * history, whose order by age the history does not hold (first
	 * names the first divergence that is not one of these) */
	uint64_t differ_age;
	uint64_t recorded_reserved_peak, recorded_allocated_peak, recorded_segments_at_peak;
	uint64_t recorded_ooms;
	struct ar_oom first_oom;
	uint64_t allocs_after_oom; /* allocations after the last oom entry: 0, the
				    * history ends in it (the run ended there, or
				    * the snapshot was taken right after) */
	struct ar_divergence first;
	/* before the window */
	uint64_t before_segments, before_segment_bytes, before_blocks, before_block_bytes;
	/* free runs: the recorded settings, and the asked ones (whatif) */
	struct ar_run as_recorded, asked;
	bool have_asked;
	struct ar_end end;
};

struct ar_options {
	bool have_asked;
	const char *asked_conf; /* whatif's --alloc-conf, over the recorded settings */
	double asked_fraction;	/* set_per_process_memory_fraction; 0: none */
	uint64_t device_size;	/* 0: the trace's, an oom's estimate, else unknown */
	int64_t only_device;	/* -1: all */
};

struct ar_result {
	struct ar_device *dev;
	size_t ndev;
	bool have_settings;
	char conf[256];			/* the recorded PYTORCH_CUDA_ALLOC_CONF, "" when unset */
	uint64_t private_pool_segments; /* segments of CUDA graphs' pools */
	uint64_t gaps;			/* windows whose earlier entries were dropped */
	enum ta_order order;		/* the tie-break that fitted best */
	bool order_tied;		/* both made the same number of the allocator's choices */
	struct ta_config recorded_config, asked_config;
};

/* A snapshot's allocator settings (as the framework-history records keep
 * them, text) as a model configuration; the defaults where absent. */
void ar_config_from(struct ta_config *c, const struct fw_snapshot *s);

/* Settings in PYTORCH_CUDA_ALLOC_CONF's syntax: 0, or -1 with a one-line
 * reason in err (model/torchalloc.h, ta_config_parse). */
int ar_check_conf(const char *conf, char *err, size_t errsize);
/* c as PYTORCH_CUDA_ALLOC_CONF's syntax, "(defaults)" when it is. */
const char *ar_config_text(const struct ta_config *c, char *buf, size_t size);

/* Whether the trace holds a history to replay. */
bool ar_has_history(const struct trace *t);

/* Replays the trace's framework history. -1, or the exit code of a read
 * that failed. */
int ar_replay(struct trace *t, const struct ar_options *o, struct ar_result *r);
void ar_free(struct ar_result *r);

#endif
