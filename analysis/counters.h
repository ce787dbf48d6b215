/* A framework's own memory counters (GMT_TAG_COUNTERS, written by the
 * helper of `run --framework-counters`), read into one model for every
 * report: per framework and device, a series of readings in time order,
 * each with the figures the frameworks share under one name:
 *
 *   figure          PyTorch memory_stats()         JAX memory_stats()  TF get_memory_info()
 *   allocated       allocated_bytes.all.current    bytes_in_use        current
 *   reserved        reserved_bytes.all.current     pool_bytes          -
 *   inactive_split  inactive_split_bytes.all.current  -                -
 *   peak_allocated  allocated_bytes.all.peak       peak_bytes_in_use   peak
 *   peak_reserved   reserved_bytes.all.peak        peak_pool_bytes     -
 *   limit           -                              bytes_limit         -
 *   alloc_retries   num_alloc_retries              -                   -
 *   ooms            num_ooms                       -                   -
 *
 * "reserved" is what the framework holds from the driver; reserved -
 * allocated is free inside its cache, which no driver call shows: the real
 * fragmentation figure (counters_cache_free). */
#ifndef GMT_ANALYSIS_COUNTERS_H
#define GMT_ANALYSIS_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/trace.h"

enum counters_has {
	CNT_ALLOCATED = 1u << 0,
	CNT_RESERVED = 1u << 1,
	CNT_INACTIVE_SPLIT = 1u << 2,
	CNT_PEAK_ALLOCATED = 1u << 3,
	CNT_PEAK_RESERVED = 1u << 4,
	CNT_LIMIT = 1u << 5,
	CNT_RETRIES = 1u << 6,
	CNT_OOMS = 1u << 7,
};

/* One reading; a figure is valid when its CNT_* bit is in `has`. */
struct counters_point {
	uint64_t time_ns;
	int reason; /* GMT_COUNTERS_WHY_* */
	unsigned has;
	uint64_t allocated, reserved, inactive_split, peak_allocated, peak_reserved, limit;
	uint64_t alloc_retries, ooms;
	const struct trace_counters *raw; /* the record, every counter by its own name */
};

/* One framework's readings of one device, in time order. */
struct counters_series {
	const char *source;	 /* "torch", "jax", "tensorflow" (the record's) */
	const char *api;	 /* "torch.cuda.memory_stats()": where the figures come from */
	const char *device_name; /* the framework's: "cuda:0", "gpu:0" */
	int64_t device;		 /* CUDA ordinal, -1: unknown */
	struct counters_point *pts;
	size_t n;
	/* over the readings (0 when not known) */
	unsigned has; /* the union of the points' */
	uint64_t max_allocated, max_reserved, max_cache_free;
	/* the framework's own peaks (peak_* counters), else the most read */
	uint64_t peak_allocated, peak_reserved;
	size_t at_max_reserved; /* index of the reading with the most reserved (else allocated) */
	size_t oom_readings;	/* readings taken by the OOM observer */
	uint64_t alloc_retries, ooms; /* the last reading's */
};

struct counters_set {
	struct counters_series *s; /* by device, then source */
	size_t n;
};

/* Reads t's COUNTERS records (after trace_open). An empty set when there
 * are none. counters_free frees it; t must outlive it. */
void counters_load(const struct trace *t, struct counters_set *out);
void counters_free(struct counters_set *set);

/* The series of `device` that knows its cache (reserved), else its first;
 * NULL when none. */
const struct counters_series *counters_for_device(const struct counters_set *set, int64_t device);
/* The last reading at or before time_ns, else the first one after it; NULL
 * for an empty series. */
const struct counters_point *counters_at(const struct counters_series *s, uint64_t time_ns);
/* The reading that stands for a moment when the device held `bytes` of
 * traced device memory: counters_at's, unless it saw less reserved than
 * the next reading, which holds no more than `bytes`: it was taken before
 * the moment's allocations (a sampling thread's reading can precede the
 * allocations that make a peak), and the next one stands for it. */
const struct counters_point *counters_for_moment(const struct counters_series *s, uint64_t time_ns,
						 uint64_t bytes);
/* reserved - allocated: free inside the framework's cache. false when the
 * reading lacks either. */
bool counters_cache_free(const struct counters_point *p, uint64_t *free_bytes);

#endif
