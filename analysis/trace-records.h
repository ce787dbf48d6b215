/* What analysis/trace.c and analysis/trace-records.c share: the symbol and
 * Python frame tables, the device list, and the metadata pass's handling of
 * each record (trace-records.c). Not for the commands: trace.h is theirs. */
#ifndef GMT_ANALYSIS_TRACE_RECORDS_H
#define GMT_ANALYSIS_TRACE_RECORDS_H

#include "analysis/trace.h"

struct trace_symbol {
	UT_hash_handle hh;
	uint64_t ip;
	uint64_t module_id;
	char *function, *file; /* function "": unknown */
	uint64_t line;
	bool looked_up; /* named from the module files (or tried): final */
};

struct trace_pyframe {
	UT_hash_handle hh;
	uint64_t id;
	char *function, *file;
	uint64_t line;
};

/* Its library name and framework row, from its path. */
void trace_module_classify(struct trace_module *m);

/* The device with this ordinal, added (nameless) if new. */
struct trace_device *trace_dev_get(struct trace *t, int64_t ordinal);

/* A C++ name demangled (malloc'd), or NULL: see trace-records.c. */
char *trace_demangle(const char *name);

/* An entry of the symbol table; it takes function (malloc'd), copies file. */
struct trace_symbol *trace_add_symbol(struct trace *t, uint64_t ip, uint64_t module_id,
				      char *function, const char *file, uint64_t line);

/* Frame ip named from the module files (trace-names.c), kept in sym (a
 * SYMBOL without a function) or in a new entry; returned looked_up. */
struct trace_symbol *trace_name_from_files(struct trace *t, uint64_t ip, struct trace_symbol *sym);
/* One warning line on stderr when naming was cut short by its bound. */
void trace_names_warn(const struct trace *t);
void trace_names_free(struct trace *t);

/* The metadata pass's handling of a record (an event: on_event_meta). */
void trace_on_record(struct trace *t, const struct gmt_record *rec);

/* Inline: once per event in the first read. */
static inline __attribute__((always_inline)) void on_event_meta(struct trace *t,
								const struct gmt_event *e)
{
	if (t->events++ == 0 || e->time_ns < t->first_time_ns)
		t->first_time_ns = e->time_ns;
	if (e->time_ns > t->last_time_ns)
		t->last_time_ns = e->time_ns;
	if (e->device >= 0 && (!t->have_last_dev || e->device != t->last_dev)) {
		trace_dev_get(t, e->device);
		t->have_last_dev = true;
		t->last_dev = e->device;
	}
}
#endif
