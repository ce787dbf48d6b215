/* The figures `check` and `diff` compare, from one trace: the live-set
 * replay (peaks, live at end, per device and per kind), calls per API, and
 * optionally the allocation sites live at each device's peak, grouped by
 * trace_group_key. Allocations charged to an ignored library (fnmatch on
 * trace_library's basename) are left out of every figure. */
#ifndef GMT_ANALYSIS_CHECK_MEASURE_H
#define GMT_ANALYSIS_CHECK_MEASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader/hash.h"

#include "analysis/trace.h"

struct cm_call {
	UT_hash_handle hh;
	uint32_t api;
	uint64_t count, failed, bytes;
};

/* Device memory live at a device's peak, one per (device, group key). */
struct cm_site {
	UT_hash_handle hh;
	char *id; /* "DEVICE\x1fKEY": the hash key */
	const char *key;
	int64_t device;
	uint64_t bytes, count;
};

struct cm_ignore_cache;

struct cm_options {
	const char *const *ignore; /* library globs */
	size_t nignore;
	bool sites; /* second pass: sites at each device's peak */
	enum trace_group by;
	int depth;
	const struct site_opts *rules; /* the site rules (NULL: built-in) */
	bool short_names;	       /* keys with short C++ names (text output) */
};

struct measure {
	struct trace t;
	bool opened;
	struct replay rp; /* after the whole trace */
	struct cm_call *calls;
	struct cm_site *sites;
	uint64_t ignored_allocs, ignored_bytes;
	/* private */
	const struct cm_options *opt;
	struct cm_ignore_cache *cache;
	struct replay rp2;
	uint64_t last_key[2]; /* site_api's last answer: (stack, api) -> api */
	uint32_t last_api;
	uint64_t *targets; /* peak seqs, sorted */
	int64_t *target_devs;
	size_t ntargets, next_target;
};

/* Opens `path` and replays it. Returns -1 on success, else the exit code
 * (the error line is printed). The caller calls trace_finish(&m->t) after
 * its output, for the torn-tail warning or the corruption error. */
int check_measure(struct measure *m, const char *cmd, const char *path,
		  const struct cm_options *opt);
void check_measure_free(struct measure *m);

/* The device's level (zeroes when the trace never allocated on it). */
struct rp_level check_measure_dev(const struct measure *m, int64_t ordinal);
/* Whether the trace knows device `ordinal` (a DEVICE record or an event). */
bool check_measure_has_dev(const struct measure *m, int64_t ordinal);
/* The sorted ordinals of the devices the trace knows; returns the count. */
size_t check_measure_devs(const struct measure *m, int64_t **out);

#endif
