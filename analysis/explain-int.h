/* Between explain.c and the files of its findings (explain-findings.c,
 * explain-compare.c): building a finding, and one function per question. */
#ifndef GMT_ANALYSIS_EXPLAIN_INT_H
#define GMT_ANALYSIS_EXPLAIN_INT_H

#include "analysis/explain.h"

struct ex_finding *ex_add(struct ex_findings *out, const char *id, int64_t device, uint64_t bytes);
void ex_answer(struct ex_finding *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ex_change(struct ex_finding *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ex_ev(struct ex_finding *x, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "NAME", or "NAME --device N" when the trace has several devices. */
const char *ex_cmd(char *buf, size_t size, const char *name, const struct ex_facts *f,
		   const struct ex_dev *d);
/* Problems first, then what explains the figures, then notes; within
 * each, rank, then the largest first (then by id). */
void ex_sort(struct ex_findings *out);

/* explain-findings.c: one per question; each adds nothing when the facts
 * do not raise it. */
void ex_smi(const struct ex_facts *f, const struct ex_recog *r, const struct ex_dev *d,
	    struct ex_findings *out);
void ex_prealloc(const struct ex_facts *f, const struct ex_recog *r, const struct ex_dev *d,
		 struct ex_findings *out);
void ex_bfc_growth(const struct ex_facts *f, const struct ex_recog *r, const struct ex_dev *d,
		   struct ex_findings *out);
void ex_torch_cache(const struct ex_facts *f, const struct ex_recog *r, const struct ex_dev *d,
		    struct ex_findings *out);
void ex_pool_reserve(const struct ex_facts *f, const struct ex_recog *r, const struct ex_dev *d,
		     struct ex_findings *out);
void ex_growth(const struct ex_facts *f, const struct ex_recog *r, const struct ex_dev *d,
	       struct ex_findings *out);
void ex_ooms(const struct ex_facts *f, const struct ex_recog *r, struct ex_findings *out);
/* A damaged or cut trace, or lost events: first among the problems' notes. */
void ex_partial(const struct ex_facts *f, struct ex_findings *out);

/* explain-counters.c: the framework's counters in the findings; each says
 * how to get them when the trace has none (and sets needs_counters). */
bool ex_cnt_or_note(struct ex_finding *x, const struct ex_dev *d, const char *what);
bool ex_cnt_split(const struct ex_dev *d, uint64_t held, uint64_t *tensors, uint64_t *free_b);
void ex_cnt_cache(struct ex_finding *x, const struct ex_dev *d);
const char *ex_cnt_cache_advice(const struct ex_dev *d, char *buf, size_t size);
void ex_cnt_regions(struct ex_finding *x, const struct ex_dev *d, uint64_t sum, uint64_t last);
void ex_cnt_used(struct ex_finding *x, const struct ex_recog *r, const struct ex_dev *d,
		 char *advice, size_t size);
void ex_cnt_oom(struct ex_finding *x, const struct ex_oom *o);

#endif
