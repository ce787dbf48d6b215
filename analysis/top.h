/* top's model: allocation sites (or functions, libraries, APIs, phases)
 * with the bytes each held at its device's peak, at the end, in total, and
 * its calls. Per trace one read of the file (top_read_trace): the replay
 * finds each device's peak and what was live there (peakset), and counts
 * what every stack allocated. With --tensors or --by range, the old passes
 * (top_add_trace): the first replays the live set to find each device's
 * peak and counts what every row allocated; the second replays up to each
 * peak and charges what is live there to its row.
 * Several traces (one per process) add up per device ordinal and row.
 * cli/cmd-top.c prints it. */
#ifndef GMT_ANALYSIS_TOP_H
#define GMT_ANALYSIS_TOP_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/fwtensors.h"
#include "analysis/phase.h"
#include "analysis/trace.h"

struct top_trace {
	struct trace t;
	struct rp_dev *devs;
	size_t ndevs;
	uint64_t peak;		    /* the highest device peak */
	bool early;		    /* --tensors: a peak came before the history's first entry */
	struct fwt_peaks peak_ptrs; /* --tensors */
	/* --tensors: where the history's tensor totals begin, and whether
	 * it missed some: begins after the first segment's driver call, or
	 * dropped entries (a GAP) */
	uint64_t hist_from_ns, first_seg_ns;
	bool hist_late;
	size_t hist_gaps;
	/* pass 2 */
	struct rp_dev **targets;
	size_t ntargets, next;
};

struct top {
	struct trace_rows rows;
	struct top_trace *cur;
	struct phase_tracker phases; /* --by range: this pass's */
	bool tensors;		     /* --tensors: PyTorch's segments split into tensors */
	struct fwt_set *fwt;	     /* the tensors at the moment charged; NULL: none */
	const struct fwt_set *segs;  /* pass 1, --tensors: whose driver calls are segments */
	uint32_t seg_api; /* the API that made the last segment (the tensors' row, by api) */
};

/* --tensors: the row of what a framework segment held beyond its tensors'
 * requests: free blocks, and the rounding inside the tensors' blocks
 * (fragmentation's "free in the cache" is the free blocks alone). */
#define TOP_CACHED "(PyTorch's cache: free blocks and rounding)"

/* Both passes over one opened trace (tp->rows initialised: trace_rows_init),
 * its rows added to tp->rows: -1, or the exit code after the error line.
 * With tp->tensors and the framework's history in the trace, a framework
 * segment is charged as its tensors (their stacks) and TOP_CACHED, and
 * the driver calls that made segments give way, in total and calls, to the
 * tensors' allocations in the history. */
int top_add_trace(struct top *tp, struct top_trace *tt);
/* Opens path into tt and adds its rows to tp->rows in one read of the
 * file (the counts kept per stack until the names are read, the peaks'
 * live sets from analysis/peakset.h), or, with --tensors or --by range,
 * trace_open and top_add_trace's passes. Same returns as top_add_trace;
 * after a failed open tt->t is not open. */
int top_read_trace(struct top *tp, struct top_trace *tt, const char *cmd, const char *path,
		   const struct site_opts *sites, bool short_names);
/* What top_add_trace kept of a trace (tt->t stays open). */
void top_trace_free(struct top_trace *tt);

struct top_dev {
	int64_t ordinal;
	uint64_t peak; /* summed over the traces */
	int64_t peak_time;
	size_t ntraces;
};

/* The devices of n traces, by ordinal, each with its peaks summed (and,
 * for one trace, when it peaked). malloc'd, *ndev of them. */
struct top_dev *top_devices(const struct top_trace *ts, int n, size_t *ndev);

#endif
