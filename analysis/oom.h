/* The oom report's figures for one trace: every allocation call that
 * failed, and every out-of-memory error a framework raised (FWOOM records,
 * analysis/fwoom.h: joined to the failed call it explains, else on its
 * own), named by its case (enum oom_case), with the figures that decide
 * it: the device's total and free memory then (the MEMINFO record the
 * library writes after a failure, else an NVML sample), what this process
 * held (its allocations, by library and site, and its contexts and module
 * code, from analysis/accounting), what other processes held (NVML's
 * per-process figure), and what the framework did next (a retry after
 * frees, a smaller request). Also the places where a driver-level trace
 * cannot see an out-of-memory error at all (oom_blind), and the other
 * failed calls counted by API and result. docs/reports.md, "oom". */
#ifndef GMT_ANALYSIS_OOM_H
#define GMT_ANALYSIS_OOM_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/fwoom.h"
#include "analysis/trace.h"

#define OOM_MAX	      200 /* failed allocations analysed and kept; all are counted */
#define OOM_TOP_LIBS  8
#define OOM_TOP_SITES 5
#define OOM_MAX_OTHER 64 /* distinct (api, result) pairs kept */
#define OOM_MAX_BLIND 4
/* An NVML sample speaks for a failure taken this long after it at most. */
#define OOM_SAMPLE_WINDOW_NS 1000000000ull
/* A retry answers a failure only this soon after it (PyTorch: a cache
 * flush then the same cudaMalloc; CuPy: free_all_blocks, gc, the same). */
#define OOM_RETRY_NS 1000000000ull
/* A smaller request at least this share of a failed one answers it as a
 * back-off (BFC's 0.9x, a probe's halving), not as an unrelated call. */
#define OOM_BACKOFF_MIN 0.4

/* In the order a failure is tested against them (oom_judge, oom_judge_fw). */
enum oom_case {
	OOM_NOT_AN_OOM,	   /* not out of device memory: other error, host/VA, probe */
	OOM_RECOVERED,	   /* the same request succeeded after frees: not a failure */
	OOM_EXCEEDS_TOTAL, /* larger than the device's total memory */
	/* free inside the framework's cache or pool was at least the request,
	 * but no block of it was large enough (its own figures only) */
	OOM_FRAGMENTATION,
	/* a limit set below the device refused it, and the device had room
	 * (a memory fraction, memory_limit, XLA's fraction, CuPy's limit) */
	OOM_LIMIT,
	OOM_THIS_PROCESS,    /* this process's memory stood in the way: its working set */
	OOM_OTHER_PROCESSES, /* other processes' memory stood in the way */
	OOM_UNKNOWN,	     /* free memory unknown: no MEMINFO record, no sample */
	OOM_NCASES,
};
/* The --json names (the verdict corpus reads them): "not-an-oom"... */
extern const char *const oom_case_name[OOM_NCASES];

struct oom_holder {
	const char *name; /* library (trace-owned string) */
	uint64_t stack_id;
	uint64_t bytes, count;
};

/* What the same thread did next: the framework's answer to the failure. */
struct oom_next {
	bool seen;		     /* a later device allocation on the thread */
	bool ok;		     /* it succeeded */
	bool same_api;		     /* the same call as the failed one */
	uint64_t size, time_ns;	     /* its request and time */
	uint64_t freed, freed_count; /* bytes and calls freed on the thread before it */
};

struct oom_failure {
	struct gmt_event e;
	bool oom_result;		   /* the result is out-of-memory (2) */
	bool device;			   /* device memory (gmt_device_memory) */
	const struct trace_meminfo *mi;	   /* NULL: none matched */
	const struct trace_sample *sample; /* NVML, NULL: none near */
	/* the figures (0 where unknown; the *_known flags say which) */
	uint64_t total, free_bytes;
	bool total_known, free_known;
	uint64_t held, held_all; /* live traced device bytes: on e.device, on all */
	uint64_t contexts;	 /* contexts and module code on e.device (accounting) */
	uint64_t this_process;	 /* NVML's figure if known, else held + contexts */
	uint64_t others;	 /* in use and not this process's (total - free - this) */
	bool nvml_process;	 /* this_process is NVML's */
	/* a figure for this process larger than the device's total, so not
	 * used: NVML's per-process one (dropped_nvml) or traced + contexts; 0:
	 * none. this_process is then traced + contexts, or what was in use
	 * (total - free: from_meminfo) */
	uint64_t dropped;
	bool dropped_nvml, from_meminfo;
	struct oom_next next;
	struct oom_holder libs[OOM_TOP_LIBS], sites[OOM_TOP_SITES];
	size_t nlibs, nsites, libs_total, sites_total;
	enum oom_case kase;
	char why[640];
	bool in_chain;	/* oom.c: waiting for the thread's next device allocation */
	uint32_t chain; /* the retry chain it is in (one thread's failures until its next
			   device allocation); 0: none */
	/* the framework's error this failure is (NULL: none seen), and
	 * whether only the framework saw it: no driver call failed (e holds
	 * its time, thread, device and request; e.api is 0) */
	const struct fwoom *fw;
	bool fw_only;
	bool caught; /* the program caught the error and went on (fw->caught) */
	/* One out-of-memory error can be several failed calls: the allocator
	 * frees what it holds unused and asks again (PyTorch frameworks.md
	 * §1.4 and CuPy §3: the same request; BFC §2.4, §2.6: 0.9x back-offs
	 * and retry rounds for up to 10 s), or the framework's own error names
	 * them. error: the error's number, 1.. in trace order (0: a failure
	 * that is not out of device memory); attempt: this call's place in it,
	 * 1..attempts. An error is judged and counted by its last attempt
	 * (oom_final): the figures the program's exception saw. */
	uint32_t error, attempt, attempts;
	uint64_t first_ns, first_size; /* the error's first attempt */
	/* device bytes and calls the thread freed from the error's first
	 * attempt to this one (chain_*: oom.c's running sums) */
	uint64_t retry_freed, retry_freed_count, chain_freed, chain_freed_count;
};

/* The failure an error is judged and counted by: its last attempt (every
 * failure that is not out of device memory is its own). */
static inline bool oom_final(const struct oom_failure *o)
{
	return o->attempt == o->attempts;
}

struct oom_other {
	uint32_t api;
	uint64_t result, count, first_time;
};

/* How the process ended, as the trace tells it. */
enum oom_end {
	OOM_END_UNKNOWN,    /* no EXIT record (a trace before version 5, an exec) */
	OOM_END_OK,	    /* exit status 0 */
	OOM_END_STATUS,	    /* a non-zero exit status */
	OOM_END_NO_TRAILER, /* no trailer: killed by a signal, crashed, or still running */
};

/* A way the trace cannot show an out-of-memory error (no failing call). */
struct oom_blind {
	const char *key; /* "preallocated", "cupy-limit", "pytorch-fraction" */
	char text[640];
};

struct oom_result {
	struct oom_failure *fails; /* the first OOM_MAX failed allocations, in trace order */
	size_t nfails;
	uint64_t fails_total; /* failed allocation calls */
	/* out-of-memory errors: one per error the program met (its retried
	 * calls are one), framework errors with no failed call among them
	 * (fw_only_total of them); oom_calls_total: the failed calls with an
	 * out-of-memory result on device memory */
	uint64_t ooms_total, fw_only_total, oom_calls_total;
	uint64_t cases[OOM_NCASES]; /* per error (final attempts) and other failure */
	/* the case of the first failure that is an OOM, was not recovered and
	 * not caught, else "oom-hidden" (hidden), else "caught" if the program
	 * caught one, else "recovered-by-retry" if any was recovered, else
	 * "not-an-oom" if anything failed, else "none" */
	const char *verdict;
	struct oom_other others[OOM_MAX_OTHER]; /* failed calls that allocate nothing */
	size_t nothers;
	uint64_t others_total;
	struct oom_blind blind[OOM_MAX_BLIND];
	size_t nblind;
	/* the largest device allocation not from a pool (size 0: none), the
	 * contexts' cost on its device then, that device's traced peak, and
	 * the largest other device request (failed or not) */
	struct gmt_event largest;
	uint64_t largest_ctx, largest_peak, second;
	struct fwoom_list fw; /* the framework's errors (their failures point here) */
	enum oom_end end;
	int64_t exit_status;
	char ending[200]; /* "exit status 1", "no trailer: ..." */
	/* oom-hidden: the process ended abnormally while a framework that
	 * allocates inside a pool was loaded, and no OOM in the trace explains
	 * it: one inside the pool makes no driver call */
	bool hidden;
	const char *pool_fw; /* the framework named: "TensorFlow or JAX (BFC)"... */
	char hidden_text[700];
};

/* One replay of `t`. Returns the trace's exit code, or -1; `out` is filled
 * either way (oom_free it). */
int oom_compute(struct trace *t, struct oom_result *out);
void oom_free(struct oom_result *r);
/* Names the case of `o` from its figures and writes o->why. */
void oom_judge(struct oom_failure *o);
/* The same for a failure the framework's error explains (o->fw): its own
 * figures first, then the driver's. `pool_held`: what the driver saw this
 * process hold on the device then (a BFC pool's regions). */
void oom_judge_fw(struct oom_failure *o, uint64_t pool_held);
/* The verdict over several results, in the same way: "none"... */
const char *oom_verdict(const struct oom_result *const *rs, size_t n);
/* The memory in use that is not this process's, and who holds it: "other
 * processes 2.00 GiB", or, below OOM_RESERVE_MAX (less than any CUDA
 * context, which another process would hold), "the driver's reserve 8.81
 * MiB (...)": an idle H100 shows 8.81 MiB so (docs/validation/2026-11-23-h100,
 * plain-shared). */
#define OOM_RESERVE_MAX (64ull << 20)
const char *oom_others_text(char *buf, size_t size, uint64_t others);
/* The out-of-memory errors (each counted once, by its last attempt) the
 * framework did not recover by retry (cases other than recovered-by-retry
 * and not-an-oom) and the program did not catch, on `device` only when
 * has_device; *kase: the first one's case name ("none" without any). */
uint64_t oom_unrecovered(const struct oom_result *r, bool has_device, int64_t device,
			 const char **kase);
/* Fills r->blind: where this trace cannot show an out-of-memory error. */
void oom_find_blind(const struct trace *t, struct oom_result *r);
/* Fills r->end, r->exit_status and r->ending from the trace's EXIT record
 * and trailer. */
void oom_find_end(const struct trace *t, struct oom_result *r);
/* Fills r->hidden, r->pool_fw and r->hidden_text (after the failures are
 * judged, r->blind and r->end are filled). */
void oom_find_hidden(const struct trace *t, struct oom_result *r);

#endif
