/* gpumemtrace explain: the questions people ask about GPU memory, answered
 * as findings (an id, a one-line answer, the evidence with the command that
 * shows more, what to change), problems first, then the largest.
 *
 * Two halves, so that the other aggregators can change without touching the
 * findings' logic:
 *  - explain-facts.c, the adapter: reads one trace through the aggregators'
 *    public APIs (accounting, growth, oom) and one replay of its own into
 *    struct ex_facts, plain figures and strings;
 *  - explain.c: the framework and allocator mode, then the findings, from
 *    the facts alone (unit-tested on hand-made facts, tests/unit/test-explain.c).
 * docs/questions.md walks each finding. */
#ifndef GMT_ANALYSIS_EXPLAIN_H
#define GMT_ANALYSIS_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/frameworks.h"
#include "analysis/trace.h"

#define EX_MAX_LIBS	12 /* traced bytes by library at a moment, largest first */
#define EX_MAX_REGIONS	48 /* the framework's first driver allocations of 1 MiB or more */
#define EX_MAX_OOMS	16
#define EX_MAX_EVIDENCE 8

/* The framework's own counters (torch.cuda.memory_stats() and the like),
 * written into the trace by `run --framework-counters` (analysis/counters.h
 * names the figures per framework). present is false without them, and
 * every finding that needs them says how to get them (ex_counters_note). A
 * figure is known when its CNT_* bit is in `has`. */
struct ex_counters {
	bool present;
	const char *source, *api; /* "torch", "torch.cuda.memory_stats()" */
	unsigned has;		  /* CNT_* of the readings */
	/* the reading at the device's traced peak (in its plateau, the most
	 * reserved; else the one at or before it), and the last one */
	uint64_t peak_ns, end_ns; /* when read, since the trace start */
	uint64_t allocated, reserved, inactive_split;
	uint64_t end_allocated, end_reserved, end_inactive_split;
	/* the framework's own peaks (peak_* counters, else the most read) */
	uint64_t peak_allocated, peak_reserved, limit;
	uint64_t alloc_retries, ooms; /* the last reading's */
	size_t readings;
};

struct ex_lib {
	const char *library; /* trace-owned */
	uint64_t bytes;
};

struct ex_dev {
	int64_t ordinal;
	const char *name; /* "" when unknown */
	uint64_t total;	  /* 0: unknown */
	int driver_version;
	bool history; /* PyTorch's history: its snapshot's blocks show the cache */
	/* traced device bytes */
	uint64_t peak, peak_ns, end; /* peak_ns: since the trace start */
	uint64_t peak_until_ns;	     /* the end of the peak's plateau (0: the trace's end) */
	uint64_t async_peak, async_end, vmm_peak;
	struct ex_lib libs[EX_MAX_LIBS]; /* at the peak */
	size_t nlibs;
	/* nvidia-smi (NVML), at the peak when sampled then, else at the end */
	bool smi;
	bool smi_at_peak, smi_process;
	uint64_t smi_bytes, smi_traced, smi_async, contexts;
	int64_t unexplained;
	const char *route_key, *route_text; /* accounting's likeliest route, or NULL */
	/* nvidia-smi at the end: a stream-ordered pool's reserve is largest when
	 * little is live, so pool-reserve reads it there, not at the peak */
	bool smi_end;
	uint64_t end_smi_bytes, end_smi_traced, end_smi_async, end_contexts;
	int64_t end_unexplained;
	/* the framework's allocations of 1 MiB or more, in order: its regions
	 * or segments */
	uint64_t regions[EX_MAX_REGIONS];
	size_t nregions;
	uint64_t fw_allocs, fw_frees; /* all of them */
	uint64_t fw_vmm;	      /* of fw_allocs, cuMemCreate's */
	uint64_t biggest, biggest_ns; /* the largest allocation of all, and when */
	const char *biggest_lib;      /* whose */
	uint64_t seg_small, seg_mid,
	    seg_large; /* the framework's live at the peak: 2 MiB, 20 MiB, other */
	uint64_t seg_bytes;
	/* growth (the verdicts issue's fields) */
	const char *verdict; /* "leak", "no-leak", "undetermined" */
	char verdict_reason[512];
	bool has_rate_step;
	double rate_step, rate_s; /* bytes per iteration, per second */
	uint64_t iterations, warmup_end_ns;
	char leak_site[300];
	struct ex_counters counters;
};

struct ex_oom {
	int64_t device;
	uint64_t time_ns, size; /* time since the trace start */
	const char *api;
	const char *kase; /* "exceeds-device-total", "this-process", "other-processes",
			     "recovered-by-retry", "not-an-oom" */
	bool meminfo;
	uint64_t free_bytes, total_bytes, held, others;
	char site[300];
	/* recovered-by-retry: what was freed before the retry, and how long */
	uint64_t freed, retry_ns;
	/* the failed calls of this one error (the allocator's retries), the
	 * first one's time since the trace start */
	uint32_t attempts;
	uint64_t first_ns;
	/* the framework's counters read by its OOM observer at this failure */
	bool counters;
	uint64_t c_allocated, c_reserved, c_inactive_split;
	/* oom's explanation of the case; the verdict's failure: the first not
	 * recovered and not caught (explain names it first) */
	char why[640];
	bool fatal;
	/* the framework's own error, when one explains it (run
	 * --framework-counters): fw_only when no driver call failed */
	bool fw, fw_only, raised, caught;
	const char *fw_name, *fw_source;   /* "PyTorch", "torch" */
	char fw_type[96], fw_message[240]; /* the message's first line, cut */
	const char *limit_knob;		   /* the setting that holds the limit */
	char limit_what[200];
};

struct ex_module {
	const char *library; /* trace-owned */
	char build_id[41];   /* hex, "" when unknown */
	bool program;	     /* the traced executable, not a library */
};

struct ex_facts {
	const char *path, *command;
	const char *program; /* the executable's file name (its module's library), or NULL */
	const struct trace_env *env;
	size_t nenv;
	struct ex_module *mods;
	size_t nmods;
	struct ex_dev *devs;
	size_t ndevs;
	struct ex_oom ooms[EX_MAX_OOMS];
	size_t nooms;
	uint64_t ooms_total, retried, retry_ns; /* OOMs the framework recovered, their time */
	/* the framework's counters: OOM-observer readings near no failing
	 * driver call (an OOM the driver never saw), and the retries that
	 * recovered (num_alloc_retries less num_ooms) */
	uint64_t ooms_unseen, counter_retries;
	/* ways this trace cannot show an OOM (no failing call): oom's notes */
	char blind[4][640];
	size_t nblind;
	/* how the process ended, and oom-hidden (oom.h) */
	char ending[200];
	bool abnormal, hidden;
	const char *pool_fw;
	char hidden_text[700];
	uint64_t duration_ns;
	bool history; /* PyTorch's allocator history: its oom entries show every OOM */
	/* a damaged or cut trace, or events lost: every figure may be short */
	bool partial;
	uint64_t lost;		    /* this process's events lost */
	const char *incomplete_why; /* trace_incomplete_why(), or NULL */
};

/* The adapter: one trace's facts (only device `device` when has_device).
 * Returns -1, or a read error's exit code. Strings stay the trace's: keep
 * it open while the facts are used. */
int explain_facts(struct trace *t, bool has_device, int64_t device, struct ex_facts *f);
void explain_facts_free(struct ex_facts *f);

/* ---- recognition ---- */

/* The frameworks whose allocator modes explain tells apart: their rows of
 * the framework table (common/frameworks.h). */
enum ex_fw {
	FW_NONE = GMT_FW_NONE,
	FW_PYTORCH = GMT_FW_PYTORCH,
	FW_JAX = GMT_FW_JAX,
	FW_TF = GMT_FW_TENSORFLOW,
	FW_CUPY = GMT_FW_CUPY
};
enum ex_mode {
	MODE_DIRECT,	    /* the program's own driver calls */
	MODE_PT_CACHING,    /* PyTorch's caching allocator */
	MODE_PT_EXPANDABLE, /* expandable_segments:True */
	MODE_PT_ASYNC,	    /* backend:cudaMallocAsync */
	MODE_PT_NOCACHE,    /* PYTORCH_NO_CUDA_MEMORY_CACHING=1 */
	MODE_BFC_PREALLOC,  /* JAX / TF: one region at start-up */
	MODE_BFC_GROWTH,    /* allow_growth / PREALLOCATE=false: doubling regions */
	MODE_XLA_PLATFORM,  /* XLA_PYTHON_CLIENT_ALLOCATOR=platform */
	MODE_TF_ASYNC,	    /* TF_GPU_ALLOCATOR=cuda_malloc_async */
	MODE_CUPY_POOL,
	MODE_ASYNC_POOL, /* stream-ordered allocations, no framework named */
};

struct ex_recog {
	enum ex_fw fw;
	const char *fw_name;   /* "PyTorch", "JAX"..., "no framework" */
	const char *fw_module; /* the module that showed it, or NULL */
	enum ex_mode mode;
	const char *mode_name;
	char mode_why[200]; /* "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync" */
	double fraction;    /* MODE_BFC_PREALLOC: the share of the device asked (0: unknown) */
	/* the settings in force, by whichever name was set (PyTorch's
	 * PYTORCH_ALLOC_CONF or its older name; JAX's memory fraction) */
	struct fw_in_force alloc_conf, mem_fraction;
};

void explain_recognize(const struct ex_facts *f, struct ex_recog *r);
/* The framework and allocator mode of one trace without the findings'
 * other figures (modules, environment, allocation pattern; two replays):
 * for the reports that must say what the bytes they show are. Returns -1,
 * or a read error's exit code. */
int explain_allocator(struct trace *t, bool has_device, int64_t device, struct ex_recog *r);
/* What holds the memory a driver-level trace sees live until exit, in the
 * recognized mode: "PyTorch's caching allocator's segments", or NULL when
 * each tensor is its own driver allocation (no cache, no pool). */
const char *explain_held_by(const struct ex_recog *r, char *buf, size_t size);
/* What to do next about an OOM of this process's own memory under a cache
 * or pool (fragmentation, the allocator's settings), or NULL. */
const char *explain_oom_next(const struct ex_recog *r, char *buf, size_t size);
/* Advice to set KEY:VALUE (kv) in PyTorch's allocator settings, in the
 * name in force: "PYTORCH_ALLOC_CONF=kv (PYTORCH_CUDA_ALLOC_CONF before
 * PyTorch 2.9)" when neither is set, the value set plus kv when one is,
 * and a note when it is the older name or the other name is ignored. */
const char *explain_conf_advice(const struct ex_recog *r, const char *kv, char *buf, size_t size);
/* Advice to set JAX's memory fraction to value ("XLA_CLIENT_MEM_FRACTION=.5
 * (XLA_PYTHON_CLIENT_MEM_FRACTION in older JAX)"), or by the deprecated
 * name when that is the one set, saying so; value NULL: the name alone. */
const char *explain_fraction_advice(const struct ex_recog *r, const char *value, char *buf,
				    size_t size);
/* The recorded value of an environment variable, or NULL. */
const char *explain_env(const struct ex_facts *f, const char *key);
/* Whose part of the breakdown a library's memory is: 0 the framework's
 * (or the interpreter's), a row of the framework table for a library with
 * memory of its own (NCCL, cuBLAS, cuDNN), GMT_FW_COUNT another library. */
int explain_lib_part(const char *library);
/* The same as text: "framework", the library's name ("NCCL"), "other". */
const char *explain_lib_class(const char *library);
/* Whether sizes (n of them, in order) look like BFC's regions: growing
 * from small, each a power of two or the last ones doubling. */
bool explain_doubling(const uint64_t *sizes, size_t n);

/* ---- findings ---- */

struct ex_evidence {
	char text[640];	    /* oom's notes whole (its hidden and invisible texts) */
	char cmd[80];	    /* "accounting --device 0": run as `gpumemtrace CMD TRACE`; "" none */
	bool counters_hint; /* text is what --framework-counters would show: ex_sort words it */
};

/* What a finding is to the user, the first key of the order: what failed
 * or is wrong (an OOM, a leak, a damaged trace) first, then what explains
 * the figures, then notes. */
enum ex_severity { EX_PROBLEM, EX_EXPLAINS, EX_NOTE };
/* "problem", "explains", "note": --json's severity */
const char *explain_severity_name(enum ex_severity s);

struct ex_finding {
	const char *id;
	enum ex_severity severity; /* from the id (explain.c's table) */
	int64_t device;		   /* -1: the whole trace */
	uint64_t bytes;		   /* what it accounts for: the order, largest first */
	char answer[400];
	struct ex_evidence ev[EX_MAX_EVIDENCE];
	size_t nev;
	char change[1000];
	bool needs_counters; /* the framework's counters would make it exact */
	int rank;	     /* within a severity, before bytes: what ended the run comes first */
};

struct ex_findings {
	struct ex_finding *v;
	size_t n, cap;
};

/* The findings of one trace: by severity, then rank, then size. */
void explain_findings(const struct ex_facts *f, const struct ex_recog *r, struct ex_findings *out);
/* Why b needed more (or less) than a: the two traces' differences. */
void explain_compare(const struct ex_facts *a, const struct ex_recog *ra, const struct ex_facts *b,
		     const struct ex_recog *rb, struct ex_findings *out);
void explain_findings_free(struct ex_findings *out);
/* Without counters: "run with `gpumemtrace run --framework-counters` to
 * see WHAT", which driver calls do not show. */
const char *ex_counters_note(const char *what, char *buf, size_t size);

#endif
