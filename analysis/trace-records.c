/* The metadata pass's handling of each record (analysis/trace-records.h):
 * one function per record type, and the device list and symbol table they
 * fill. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frameworks.h"
#include "analysis/fwhist.h"
#include "analysis/trace-records.h"

void trace_module_classify(struct trace_module *m)
{
	m->library = path_basename(m->path);
	m->fw = fw_of_module(m->library, m->path);
	m->cuda = gmt_frameworks[m->fw].kind == GMT_FWK_CUDA && m->fw != GMT_FW_NONE;
}

struct trace_device *trace_dev_get(struct trace *t, int64_t ordinal)
{
	for (size_t i = 0; i < t->ndevs; i++)
		if (t->devs[i].ordinal == ordinal)
			return &t->devs[i];
	GROW(t->devs, t->ndevs, t->devs_cap);
	struct trace_device *d = &t->devs[t->ndevs++];
	memset(d, 0, sizeof(*d));
	d->ordinal = ordinal;
	d->name = xstrdup("");
	return d;
}

/* C++ names as people read them ("c10::cuda::...::alloc_block(...)", not
 * "_ZN3c104cuda..."): libstdc++'s demangler, loaded at run time so the CLI
 * links no C++ runtime. Without it, or for a name it rejects, NULL: the
 * name stays as the trace has it. */
char *trace_demangle(const char *name)
{
	typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);
	static demangle_fn fn;
	static int tried;
	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	if (!tried) {
		tried = 1;
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
		fn = h ? (demangle_fn)dlsym(h, "__cxa_demangle") : NULL;
	}
	int status = -1;
	char *out = fn ? fn(name, NULL, NULL, &status) : NULL;
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}

struct trace_symbol *trace_add_symbol(struct trace *t, uint64_t ip, uint64_t module_id,
				      char *function, const char *file, uint64_t line)
{
	struct trace_symbol *sym = xrealloc(NULL, sizeof(*sym));
	memset(sym, 0, sizeof(*sym));
	sym->ip = ip;
	sym->module_id = module_id;
	sym->function = function;
	sym->file = xstrdup(file);
	sym->line = line;
	HASH_ADD(hh, t->symbols, ip, sizeof(sym->ip), sym);
	t->symbols_added++;
	return sym;
}

static void on_process(struct trace *t, const struct gmt_record *rec)
{
	typeof(rec->u.process) const *p = &rec->u.process;
	t->has_process = true;
	t->pid = p->pid;
	t->ppid = p->ppid;
	t->start_wall_ns = p->start_wall_ns;
	size_t len = 1;
	for (size_t i = 0; i < p->argc; i++)
		len += p->argv[i].len + 1;
	free(t->command);
	t->command = xrealloc(NULL, len);
	char *o = t->command;
	for (size_t i = 0; i < p->argc; i++) {
		if (i)
			*o++ = ' ';
		memcpy(o, p->argv[i].s, p->argv[i].len);
		o += p->argv[i].len;
	}
	*o = 0;
	if (!p->argc && p->exe.len) { /* GPUMEMTRACE_RECORD_ARGV=0: the program's path */
		free(t->command);
		t->command = xstrdup(p->exe.s);
	}
	free(t->exe);
	free(t->host);
	t->exe = xstrdup(p->exe.s);
	t->host = xstrdup(p->hostname.s);
	for (size_t i = 0; i < t->nenv; i++) {
		free(t->env[i].key);
		free(t->env[i].value);
	}
	free(t->env);
	t->nenv = p->nenv;
	t->env = xrealloc(NULL, p->nenv * sizeof(*t->env));
	for (size_t i = 0; i < p->nenv; i++) {
		t->env[i].key = xstrdup(p->env[i].key.s);
		t->env[i].value = xstrdup(p->env[i].value.s);
	}
}

static void on_device(struct trace *t, const struct gmt_record *rec)
{
	struct trace_device *d = trace_dev_get(t, rec->u.device.ordinal);
	free(d->name);
	d->name = xstrdup(rec->u.device.name.s);
	d->total_bytes = rec->u.device.total_bytes;
	memset(d->uuid, 0, sizeof(d->uuid));
	memcpy(d->uuid, rec->u.device.uuid.p,
	       rec->u.device.uuid.len < 16 ? rec->u.device.uuid.len : 16);
	d->cc_major = (int)rec->u.device.cc_major;
	d->cc_minor = (int)rec->u.device.cc_minor;
	d->driver_version = (int)rec->u.device.driver_version;
}

static void on_module(struct trace *t, const struct gmt_record *rec)
{
	GROW(t->mods, t->nmods, t->mods_cap);
	struct trace_module *m = &t->mods[t->nmods++];
	memset(m, 0, sizeof(*m));
	m->id = rec->u.module.id;
	m->bias = rec->u.module.load_bias;
	m->start = rec->u.module.start;
	m->end = rec->u.module.end;
	m->path = xstrdup(rec->u.module.path.s);
	m->build_id_len = rec->u.module.build_id.len;
	m->build_id = xrealloc(NULL, m->build_id_len);
	memcpy(m->build_id, rec->u.module.build_id.p, m->build_id_len);
	trace_module_classify(m); /* now: a follower (watch) names sites before the end */
}

static void on_stack(struct trace *t, const struct gmt_record *rec)
{
	for (size_t i = 0; i < rec->u.stack.count; i++) {
		GROW(t->nodes, t->nnodes, t->nodes_cap);
		t->nodes[t->nnodes++] =
		    (struct trace_node){rec->u.stack.nodes[i].parent, rec->u.stack.nodes[i].ip};
	}
}

static void on_symbol(struct trace *t, const struct gmt_record *rec)
{
	struct trace_symbol *sym = NULL;
	uint64_t ip = rec->u.symbol.ip;
	HASH_FIND(hh, t->symbols, &ip, sizeof(ip), sym);
	/* The first one wins, but a name wins over a miss: `gpumemtrace
	 * symbolize` appends the names a process could not give. */
	if (sym && (sym->function[0] || !rec->u.symbol.function.s[0]))
		return;
	char *function = trace_demangle(rec->u.symbol.function.s);
	if (!function)
		function = xstrdup(rec->u.symbol.function.s);
	if (sym) {
		free(sym->function);
		free(sym->file);
		sym->function = function;
		sym->file = xstrdup(rec->u.symbol.file.s);
		sym->line = rec->u.symbol.line;
		sym->module_id = rec->u.symbol.module_id;
		return;
	}
	trace_add_symbol(t, ip, rec->u.symbol.module_id, function, rec->u.symbol.file.s,
			 rec->u.symbol.line);
}

static void on_lost(struct trace *t, const struct gmt_record *rec)
{
	t->lost_in_records += rec->u.lost.count;
	if (rec->u.lost.tid == 0)
		t->lost_in_children += rec->u.lost.count;
	t->lost_records++;
}

static void on_note(struct trace *t, const struct gmt_record *rec)
{
	if (rec->u.note.level == 0)
		return; /* information for `dump` (the clock): not a warning */
	GROW(t->notes, t->nnotes, t->notes_cap);
	t->notes[t->nnotes++] = xstrdup(rec->u.note.text.s);
}

static void on_meminfo(struct trace *t, const struct gmt_record *rec)
{
	GROW(t->meminfo, t->nmeminfo, t->meminfo_cap);
	t->meminfo[t->nmeminfo++] = (struct trace_meminfo){
	    .time_ns = rec->u.meminfo.time_ns,
	    .device = rec->u.meminfo.device,
	    .free_bytes = rec->u.meminfo.free_bytes,
	    .total_bytes = rec->u.meminfo.total_bytes,
	    .api = (uint32_t)rec->u.meminfo.api,
	    .tid = (int)rec->u.meminfo.tid,
	};
}

static void on_sample(struct trace *t, const struct gmt_record *rec)
{
	GROW(t->samples, t->nsamples, t->samples_cap);
	struct trace_sample *sm = &t->samples[t->nsamples++];
	memset(sm, 0, sizeof(*sm));
	sm->time_ns = rec->u.sample.time_ns;
	sm->device = -1;
	sm->nvml_index = rec->u.sample.nvml_index;
	memcpy(sm->uuid, rec->u.sample.uuid.p,
	       rec->u.sample.uuid.len < 16 ? rec->u.sample.uuid.len : 16);
	sm->used_bytes = rec->u.sample.used_bytes;
	sm->total_bytes = rec->u.sample.total_bytes;
	sm->process_known = rec->u.sample.flags & GMT_SAMPLE_PROCESS_KNOWN;
	sm->process_used_bytes = sm->process_known ? rec->u.sample.process_used_bytes : 0;
	sm->reason = (int)rec->u.sample.reason;
}

static void on_range(struct trace *t, const struct gmt_record *rec)
{
	GROW(t->ranges, t->nranges, t->ranges_cap);
	t->ranges[t->nranges++] = (struct trace_range){
	    .time_ns = rec->u.range.time_ns,
	    .tid = (int)rec->u.range.tid,
	    .op = (int)rec->u.range.op,
	    .id = rec->u.range.id,
	    .source = (int)rec->u.range.source,
	    .text = xstrdup(rec->u.range.text.s),
	};
}

static struct trace_counter *copy_values(const struct gmt_counter *v, size_t n)
{
	struct trace_counter *out = xcalloc(n + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		out[i].name = xstrdup(v[i].name.s);
		out[i].value = v[i].value;
	}
	return out;
}

static void on_counters(struct trace *t, const struct gmt_record *rec)
{
	GROW(t->counters, t->ncounters, t->counters_cap);
	struct trace_counters *c = &t->counters[t->ncounters++];
	*c = (struct trace_counters){
	    .time_ns = rec->u.counters.time_ns,
	    .tid = (int)rec->u.counters.tid,
	    .reason = (int)rec->u.counters.reason,
	    .source = xstrdup(rec->u.counters.source.s),
	    .device_name = xstrdup(rec->u.counters.device.s),
	    .device = rec->u.counters.ordinal,
	    .n = rec->u.counters.count,
	    .v = copy_values(rec->u.counters.v, rec->u.counters.count),
	};
}

static void on_fwoom(struct trace *t, const struct gmt_record *rec)
{
	if (t->fwooms_total++ >= TRACE_MAX_FWOOM)
		return;
	GROW(t->fwooms, t->nfwooms, t->fwooms_cap);
	size_t n =
	    rec->u.fwoom.count < GMT_FWOOM_VALUES_MAX ? rec->u.fwoom.count : GMT_FWOOM_VALUES_MAX;
	size_t len = rec->u.fwoom.message.len < TRACE_FWOOM_TEXT ? rec->u.fwoom.message.len
								 : TRACE_FWOOM_TEXT;
	char *msg = xrealloc(NULL, len + 1);
	memcpy(msg, rec->u.fwoom.message.s, len);
	msg[len] = '\0';
	t->fwooms[t->nfwooms++] = (struct trace_fwoom){
	    .time_ns = rec->u.fwoom.time_ns,
	    .tid = (int)rec->u.fwoom.tid,
	    .how = (int)rec->u.fwoom.how,
	    .source = xstrdup(rec->u.fwoom.source.s),
	    .type = xstrdup(rec->u.fwoom.type.s),
	    .message = msg,
	    .message_len = len,
	    .device = rec->u.fwoom.ordinal,
	    .v = copy_values(rec->u.fwoom.v, n),
	    .n = n,
	};
}

static void on_exit_rec(struct trace *t, const struct gmt_record *rec)
{
	t->has_exit = true;
	t->exit_how = (int)rec->u.exit.how;
	t->exit_status = rec->u.exit.status;
	t->exit_signal = rec->u.exit.signal;
	t->exit_time_ns = rec->u.exit.time_ns;
}

static void on_pyframe(struct trace *t, const struct gmt_record *rec)
{
	struct trace_pyframe *pf = NULL;
	uint64_t id = rec->u.pyframe.id;
	HASH_FIND(hh, t->pyframes, &id, sizeof(id), pf);
	if (pf)
		return; /* the first one wins */
	pf = xcalloc(1, sizeof(*pf));
	pf->id = id;
	pf->function = xstrdup(rec->u.pyframe.function.s);
	pf->file = xstrdup(rec->u.pyframe.file.s);
	pf->line = rec->u.pyframe.line;
	HASH_ADD(hh, t->pyframes, id, sizeof(pf->id), pf);
}

static void on_trailer(struct trace *t, const struct gmt_record *rec)
{
	t->has_trailer = true;
	t->trailer_end_ns = rec->u.trailer.end_time_ns;
	t->trailer_events = rec->u.trailer.events;
	t->trailer_lost = rec->u.trailer.lost;
	t->trailer_reason = rec->u.trailer.reason;
	t->trailer_stack_nodes = rec->u.trailer.stack_nodes;
}

/* No default: -Wswitch names a new record type. Types the metadata pass
 * has no use for are listed too, doing nothing. */
void trace_on_record(struct trace *t, const struct gmt_record *rec)
{
	if (rec->type != GMT_REC_CHUNK)
		t->ends_with_trailer = rec->type == GMT_REC_TRAILER;
	switch (rec->type) {
	case GMT_REC_PROCESS:
		on_process(t, rec);
		break;
	case GMT_REC_DEVICE:
		on_device(t, rec);
		break;
	case GMT_REC_MODULE:
		on_module(t, rec);
		break;
	case GMT_REC_STACK:
		on_stack(t, rec);
		break;
	case GMT_REC_SYMBOL:
		on_symbol(t, rec);
		break;
	case GMT_REC_LOST:
		on_lost(t, rec);
		break;
	case GMT_REC_NOTE:
		on_note(t, rec);
		break;
	case GMT_REC_MEMINFO:
		on_meminfo(t, rec);
		break;
	case GMT_REC_SAMPLE:
		on_sample(t, rec);
		break;
	case GMT_REC_RANGE:
		on_range(t, rec);
		break;
	case GMT_REC_PYFRAME:
		on_pyframe(t, rec);
		break;
	case GMT_REC_COUNTERS:
		on_counters(t, rec);
		break;
	case GMT_REC_FWSNAP:
	case GMT_REC_FWTRACE:
	case GMT_REC_FWSEG:
		fwhist_on_record(t, rec);
		break;
	case GMT_REC_FWOOM:
		on_fwoom(t, rec);
		break;
	case GMT_REC_EXIT:
		on_exit_rec(t, rec);
		break;
	case GMT_REC_TRAILER:
		on_trailer(t, rec);
		break;
	case GMT_REC_EVENT:
		on_event_meta(t, &rec->u.event);
		break;
	case GMT_REC_CHUNK:
		t->last_seq = rec->u.chunk.seq;
		break;
	case GMT_REC_THREAD:
	case GMT_REC_EVENTS:
		break;
	}
}
