/* gpumemtrace dump TRACE: every record, one line each. The runnable spec of
 * the format: what it prints is exactly what is on disk, decoded. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/fwhist.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "analysis/trace.h"

static const char about[] =
    "Prints the header, then every record of the trace, one line each, prefixed\n"
    "with its file offset (in a zstd-compressed chunk: the chunk's payload\n"
    "offset plus the offset in the decompressed payload): chunk boundaries\n"
    "(a compressed one with its size on disk and decompressed), process,\n"
    "modules, devices, stack\n"
    "nodes, threads, event batches and each event (API, time since the trace\n"
    "start, thread, device, pointer, size, per-API fields, result, stack id),\n"
    "lost events, symbols, notes, a framework's allocator snapshots (FWSNAP,\n"
    "its history entries FWTRACE, its segments and blocks FWSEG), the trailer.\n"
    "The last line says how the\n"
    "read ended (chunks read, complete or not, unreadable bytes). Several\n"
    "traces are dumped in turn, each under a \"==> TRACE <==\" line.\n"
    "\n"
    "examples:\n"
    "  gpumemtrace dump gpumemtrace.1234.gmt | less\n"
    "  gpumemtrace dump run.gmt | grep MEMINFO     # what the device had free at each OOM\n";
static const struct opt_usage usage = {
    .name = "dump", .args = "TRACE...", .min_args = 1, .about = about};

static void str(FILE *f, struct gmt_str s)
{
	json_str(f, s.s, s.len);
}

static void hex(FILE *f, struct gmt_blob b)
{
	if (!b.len)
		fputs("-", f);
	for (size_t i = 0; i < b.len; i++)
		fprintf(f, "%02x", b.p[i]);
}

static void uuid(FILE *f, struct gmt_blob b)
{
	if (b.len != 16) {
		hex(f, b);
		return;
	}
	for (size_t i = 0; i < 16; i++)
		fprintf(f, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", b.p[i]);
}

/* aux and aux2 under their names (format.h's enum gmt_aux, the last
 * column of GMT_API_LIST). */
static void aux_fields(FILE *f, const struct gmt_event *e)
{
	const struct api_info *a = api_lookup(e->api);
	const struct aux_names *n = aux_names(a ? a->aux : GMT_AUX_NONE);
	uint64_t v[2] = {e->aux, e->aux2};
	bool has[2] = {e->flags & GMT_EV_HAS_AUX, e->flags & GMT_EV_HAS_AUX2};
	for (int k = 0; k < 2; k++)
		if (has[k])
			fprintf(f, n->hex[k] ? " %s 0x%" PRIx64 : " %s %" PRIu64, n->name[k], v[k]);
	if (a && a->aux == GMT_AUX_LOCATION && has[0])
		fputs(e->aux == 1 ? " (device)" : e->aux == 2 ? " (host)" : "", f);
}

static void result(FILE *f, const struct gmt_event *e)
{
	if (!gmt_failed(e->result, e->flags)) {
		fputs(" ok", f);
		return;
	}
	const char *n = result_name(e->api, e->result);
	fprintf(f, " FAILED %" PRIu64 "%s%s%s", e->result, n ? " (" : "", n ? n : "", n ? ")" : "");
}

static void wall(FILE *f, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;
	char buf[64];
	if (gmtime_r(&t, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm))
		fprintf(f, "%s.%09" PRIu64 "Z", buf, ns % 1000000000u);
	else
		fprintf(f, "%" PRIu64, ns);
}

/* One function per record type: each prints the line after the offset. */

static void dump_chunk(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	fprintf(f,
		"CHUNK #%" PRIu64 " seq %" PRIu64 " payload %" PRIu32 " bytes crc32c 0x%08" PRIx32,
		rec->u.chunk.index, rec->u.chunk.seq, rec->u.chunk.payload_len, rec->u.chunk.crc);
	if (rec->u.chunk.zstd)
		fprintf(f, " zstd raw %" PRIu32 " bytes", rec->u.chunk.raw_len);
	fputc('\n', f);
}

static void dump_process(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	typeof(rec->u.process) const *p = &rec->u.process;
	fprintf(f, "PROCESS pid %" PRIu64 " ppid %" PRIu64 " start_wall ", p->pid, p->ppid);
	wall(f, p->start_wall_ns);
	fputs(" host ", f);
	str(f, p->hostname);
	fputs(" exe ", f);
	str(f, p->exe);
	fprintf(f, " argv[%zu] [", p->argc);
	for (size_t i = 0; i < p->argc; i++) {
		if (i)
			fputs(", ", f);
		str(f, p->argv[i]);
	}
	fprintf(f, "] env[%zu] {", p->nenv);
	for (size_t i = 0; i < p->nenv; i++) {
		if (i)
			fputs(", ", f);
		str(f, p->env[i].key);
		fputs(": ", f);
		str(f, p->env[i].value);
	}
	fputs("}\n", f);
}

static void dump_module(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	fprintf(
	    f, "MODULE id %" PRIu64 " [0x%" PRIx64 ", 0x%" PRIx64 ") load_bias 0x%" PRIx64 " path ",
	    rec->u.module.id, rec->u.module.start, rec->u.module.end, rec->u.module.load_bias);
	str(f, rec->u.module.path);
	fputs(" build_id ", f);
	hex(f, rec->u.module.build_id);
	fputc('\n', f);
}

static void dump_device(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	char b1[32];
	fprintf(f, "DEVICE %" PRId64 " name ", rec->u.device.ordinal);
	str(f, rec->u.device.name);
	fputs(" uuid ", f);
	uuid(f, rec->u.device.uuid);
	fprintf(f, " total %" PRIu64 " (%s) cc %" PRIu64 ".%" PRIu64 " driver %" PRIu64 "\n",
		rec->u.device.total_bytes, fmt_size(b1, rec->u.device.total_bytes),
		rec->u.device.cc_major, rec->u.device.cc_minor, rec->u.device.driver_version);
}

static void dump_stack(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	fprintf(f, "STACK %zu nodes:", rec->u.stack.count);
	for (size_t i = 0; i < rec->u.stack.count; i++) {
		const struct gmt_stack_node *n = &rec->u.stack.nodes[i];
		fprintf(f, "%s #%" PRIu64 " parent %" PRIu64 " ip 0x%" PRIx64, i ? "," : "", n->id,
			n->parent, n->ip);
	}
	fputc('\n', f);
}

static void dump_thread(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	fprintf(f, "THREAD tid %" PRIu64 " name ", rec->u.thread.tid);
	str(f, rec->u.thread.name);
	fputc('\n', f);
}

static void dump_events(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	char b1[32];
	fprintf(f, "EVENTS tid %" PRIu64 " base %s count %" PRIu64 "%s\n", rec->u.events.tid,
		fmt_reltime(b1, (int64_t)(rec->u.events.base_time_ns - mono0)), rec->u.events.count,
		rec->u.events.columns ? " (columns)" : "");
}

static void dump_event(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	char b1[32], b2[32];
	const struct gmt_event *e = &rec->u.event;
	fprintf(f,
		"  EVENT #%" PRIu64 " %s tid %" PRIu64 " %s dev %" PRId64 " ptr 0x%" PRIx64
		" size %" PRIu64,
		e->index, fmt_reltime(b1, (int64_t)(e->time_ns - mono0)), e->tid, api_name(e->api),
		e->device, e->ptr, e->size);
	if (e->size >= 1024)
		fprintf(f, " (%s)", fmt_size(b2, e->size));
	aux_fields(f, e);
	fprintf(f, " stack %" PRIu64, e->stack_id);
	result(f, e);
	fputc('\n', f);
}

static void dump_lost(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	char b1[32];
	fprintf(f, "LOST tid %" PRIu64 " count %" PRIu64 " at %s\n", rec->u.lost.tid,
		rec->u.lost.count, fmt_reltime(b1, (int64_t)(rec->u.lost.time_ns - mono0)));
}

static void dump_symbol(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	fprintf(f, "SYMBOL 0x%" PRIx64 " module %" PRIu64 " function ", rec->u.symbol.ip,
		rec->u.symbol.module_id);
	str(f, rec->u.symbol.function);
	fputs(" file ", f);
	str(f, rec->u.symbol.file);
	fprintf(f, " line %" PRIu64 "\n", rec->u.symbol.line);
}

static void dump_note(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	fprintf(f, "NOTE %s ",
		rec->u.note.level == 0	 ? "info"
		: rec->u.note.level == 1 ? "warning"
					 : "level?");
	str(f, rec->u.note.text);
	fputc('\n', f);
}

static void dump_meminfo(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	char b1[32], b2[32], b3[32];
	fprintf(f,
		"MEMINFO %s tid %" PRIu64 " dev %" PRId64 " free %" PRIu64 " (%s) total %" PRIu64
		" (%s) after %s\n",
		fmt_reltime(b1, (int64_t)(rec->u.meminfo.time_ns - mono0)), rec->u.meminfo.tid,
		rec->u.meminfo.device, rec->u.meminfo.free_bytes,
		fmt_size(b2, rec->u.meminfo.free_bytes), rec->u.meminfo.total_bytes,
		fmt_size(b3, rec->u.meminfo.total_bytes), api_name((uint32_t)rec->u.meminfo.api));
}

static void dump_sample(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	static const char *const why[] = {"periodic", "peak", "oom", "start", "end"};
	char b1[32], b2[32], b3[32], b4[32];
	uint64_t rs = rec->u.sample.reason;
	fprintf(f, "SAMPLE %s nvml %" PRIu64 " uuid ",
		fmt_reltime(b1, (int64_t)(rec->u.sample.time_ns - mono0)),
		rec->u.sample.nvml_index);
	for (size_t i = 0; i < rec->u.sample.uuid.len; i++)
		fprintf(f, "%02x", rec->u.sample.uuid.p[i]);
	fprintf(f, " used %" PRIu64 " (%s) total %" PRIu64 " (%s) process ",
		rec->u.sample.used_bytes, fmt_size(b2, rec->u.sample.used_bytes),
		rec->u.sample.total_bytes, fmt_size(b3, rec->u.sample.total_bytes));
	if (rec->u.sample.flags & GMT_SAMPLE_PROCESS_KNOWN)
		fprintf(f, "%" PRIu64 " (%s)", rec->u.sample.process_used_bytes,
			fmt_size(b4, rec->u.sample.process_used_bytes));
	else
		fputs("unknown", f);
	fprintf(f, " reason %s\n", rs < sizeof why / sizeof *why ? why[rs] : "?");
}

static void dump_range(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	static const char *const ops[] = {"?", "push", "pop", "start", "end", "mark"};
	char b1[32];
	uint64_t op = rec->u.range.op;
	fprintf(f, "RANGE %s tid %" PRIu64 " %s id %" PRIu64 " source %s text ",
		fmt_reltime(b1, (int64_t)(rec->u.range.time_ns - mono0)), rec->u.range.tid,
		op < sizeof ops / sizeof *ops ? ops[op] : "?", rec->u.range.id,
		rec->u.range.source == GMT_RANGE_SRC_NVTX  ? "nvtx"
		: rec->u.range.source == GMT_RANGE_SRC_API ? "api"
							   : "?");
	str(f, rec->u.range.text);
	fputc('\n', f);
}

static void dump_pyframe(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	fprintf(f, "PYFRAME %" PRIu64 " function ", rec->u.pyframe.id);
	str(f, rec->u.pyframe.function);
	fputs(" file ", f);
	str(f, rec->u.pyframe.file);
	fprintf(f, " line %" PRIu64 "\n", rec->u.pyframe.line);
}

/* A COUNTERS or FWOOM record's names and values, one a line. */
static void dump_values(FILE *f, const struct gmt_counter *v, size_t n)
{
	char b[32];
	for (size_t i = 0; i < n; i++) {
		fputs("          ", f);
		const struct gmt_counter *c = &v[i];
		str(f, c->name);
		/* counts ("num_ooms") print bare; byte counters with their size */
		if (strstr(c->name.s, "bytes") || strstr(c->name.s, "size") ||
		    !strcmp(c->name.s, "current") || !strcmp(c->name.s, "peak"))
			fprintf(f, " %" PRIu64 " (%s)\n", c->value, fmt_size(b, c->value));
		else
			fprintf(f, " %" PRIu64 "\n", c->value);
	}
}

static void dump_counters(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	static const char *const why[] = {"periodic", "oom", "start", "end"};
	char b1[32];
	uint64_t rs = rec->u.counters.reason;
	fprintf(f, "COUNTERS %s tid %" PRIu64 " reason %s source ",
		fmt_reltime(b1, (int64_t)(rec->u.counters.time_ns - mono0)), rec->u.counters.tid,
		rs < sizeof why / sizeof *why ? why[rs] : "?");
	str(f, rec->u.counters.source);
	fputs(" device ", f);
	str(f, rec->u.counters.device);
	fprintf(f, " ordinal %" PRId64 " count %zu\n", rec->u.counters.ordinal,
		rec->u.counters.count);
	dump_values(f, rec->u.counters.v, rec->u.counters.count);
}

static void dump_fwoom(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	static const char *const how[] = {"observer", "excepthook", "thread", "at-exit"};
	char b1[32];
	uint64_t h = rec->u.fwoom.how;
	fprintf(f, "FWOOM %s tid %" PRIu64 " how %s source ",
		fmt_reltime(b1, (int64_t)(rec->u.fwoom.time_ns - mono0)), rec->u.fwoom.tid,
		h < sizeof how / sizeof *how ? how[h] : "?");
	str(f, rec->u.fwoom.source);
	fputs(" type ", f);
	str(f, rec->u.fwoom.type);
	fprintf(f, " ordinal %" PRId64 " count %zu message ", rec->u.fwoom.ordinal,
		rec->u.fwoom.count);
	str(f, rec->u.fwoom.message);
	fputc('\n', f);
	dump_values(f, rec->u.fwoom.v, rec->u.fwoom.count);
}

static void dump_exit(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	char b1[32];
	uint64_t h = rec->u.exit.how;
	fprintf(f, "EXIT %s how %s status %" PRId64 " signal %" PRIu64 "\n",
		fmt_reltime(b1, (int64_t)(rec->u.exit.time_ns - mono0)),
		h == GMT_EXIT_EXIT    ? "exit"
		: h == GMT_EXIT__EXIT ? "_exit"
				      : "?",
		rec->u.exit.status, rec->u.exit.signal);
}

static void dump_fwsnap(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	static const char *const why[] = {"requested", "oom", "exit", "change", "import"};
	char b1[32];
	uint64_t rs = rec->u.fwsnap.reason, fl = rec->u.fwsnap.flags;
	fprintf(f, "FWSNAP %s tid %" PRIu64 " seq %" PRIu64 " reason %s source ",
		fmt_reltime(b1, (int64_t)(rec->u.fwsnap.time_ns - mono0)), rec->u.fwsnap.tid,
		rec->u.fwsnap.seq, rs < sizeof why / sizeof *why ? why[rs] : "?");
	str(f, rec->u.fwsnap.source);
	fprintf(f, " wall ");
	wall(f, rec->u.fwsnap.wall_ns);
	fprintf(f, " flags 0x%" PRIx64 "%s%s%s%s max_entries %" PRIu64 " settings %zu\n", fl,
		fl & GMT_FWSNAP_HISTORY ? " history" : "",
		fl & GMT_FWSNAP_PY_STACKS ? " python-stacks" : "",
		fl & GMT_FWSNAP_CPP_STACKS ? " cpp-stacks" : "",
		fl & GMT_FWSNAP_NO_TIME ? " no-time" : "", rec->u.fwsnap.max_entries,
		rec->u.fwsnap.count);
	for (size_t i = 0; i < rec->u.fwsnap.count; i++) {
		fputs("          ", f);
		str(f, rec->u.fwsnap.settings[i].key);
		fputc(' ', f);
		str(f, rec->u.fwsnap.settings[i].value);
		fputc('\n', f);
	}
}

static void dump_fwtrace(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	char b1[32];
	fprintf(f,
		"FWTRACE seq %" PRIu64 " dev %" PRId64 " flags 0x%" PRIx64
		"%s base_time_us %" PRIu64 " count %zu\n",
		rec->u.fwtrace.seq, rec->u.fwtrace.device, rec->u.fwtrace.flags,
		rec->u.fwtrace.flags & GMT_FWTRACE_GAP ? " gap" : "", rec->u.fwtrace.base_time_us,
		rec->u.fwtrace.count);
	for (size_t i = 0; i < rec->u.fwtrace.count; i++) {
		const struct gmt_fw_entry *e = &rec->u.fwtrace.v[i];
		fprintf(f, "          #%zu %s ", i, gmt_fw_action_name(e->action));
		if (e->action > GMT_FW_ACTION_MAX_)
			fprintf(f, "(%" PRIu32 ") ", e->action);
		if (e->action == GMT_FW_OOM)
			fprintf(f, "device_free %" PRIu64 " (%s)", e->addr, fmt_size(b1, e->addr));
		else
			fprintf(f, "addr 0x%" PRIx64, e->addr);
		fprintf(f,
			" size %" PRIu64 " (%s) stream 0x%" PRIx64 " time_us %" PRIu64
			" stack %" PRIu64 "\n",
			e->size, fmt_size(b1, e->size), e->stream, e->time_us, e->stack_id);
	}
}

static void dump_fwseg(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	char b1[32];
	uint64_t fl = rec->u.fwseg.flags;
	fprintf(f,
		"FWSEG seq %" PRIu64 " dev %" PRId64 " addr 0x%" PRIx64 " total %" PRIu64
		" (%s) stream 0x%" PRIx64 " flags 0x%" PRIx64 "%s%s%s pool %" PRIu64 ",%" PRIu64
		" stack %" PRIu64 " blocks %zu\n",
		rec->u.fwseg.seq, rec->u.fwseg.device, rec->u.fwseg.address,
		rec->u.fwseg.total_size, fmt_size(b1, rec->u.fwseg.total_size), rec->u.fwseg.stream,
		fl, fl & GMT_FWSEG_SMALL ? " small" : " large",
		fl & GMT_FWSEG_EXPANDABLE ? " expandable" : "",
		fl & GMT_FWSEG_CONTINUED ? " continued" : "", rec->u.fwseg.pool_a,
		rec->u.fwseg.pool_b, rec->u.fwseg.stack_id, rec->u.fwseg.count);
	for (size_t i = 0; i < rec->u.fwseg.count; i++) {
		const struct gmt_fw_block *b = &rec->u.fwseg.v[i];
		fprintf(f,
			"          block 0x%" PRIx64 " size %" PRIu64 " (%s) requested %" PRIu64
			" %s stack %" PRIu64 "\n",
			b->address, b->size, fmt_size(b1, b->size), b->requested_size,
			gmt_fwblock_state_name(b->state), b->stack_id);
	}
}

static void dump_trailer(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	char b1[32];
	uint64_t why = rec->u.trailer.reason;
	fprintf(f,
		"TRAILER end %s events %" PRIu64 " lost %" PRIu64 " stack_nodes %" PRIu64
		" reason %" PRIu64 " (%s)\n",
		fmt_reltime(b1, (int64_t)(rec->u.trailer.end_time_ns - mono0)),
		rec->u.trailer.events, rec->u.trailer.lost, rec->u.trailer.stack_nodes, why,
		why == GMT_END_EXIT    ? "exit"
		: why == GMT_END__EXIT ? "_exit"
		: why == GMT_END_EXEC  ? "exec"
				       : "?");
}

/* No default: -Wswitch names a new record type that prints nothing yet. */
static void dump_record(FILE *f, const struct gmt_record *rec, uint64_t mono0)
{
	fprintf(f, "@%-8" PRIu64 " ", rec->offset);
	switch (rec->type) {
	case GMT_REC_CHUNK:
		dump_chunk(f, rec, mono0);
		return;
	case GMT_REC_COUNTERS:
		dump_counters(f, rec, mono0);
		return;
	case GMT_REC_FWOOM:
		dump_fwoom(f, rec, mono0);
		return;
	case GMT_REC_EXIT:
		dump_exit(f, rec, mono0);
		return;
	case GMT_REC_PROCESS:
		dump_process(f, rec, mono0);
		return;
	case GMT_REC_MODULE:
		dump_module(f, rec, mono0);
		return;
	case GMT_REC_DEVICE:
		dump_device(f, rec, mono0);
		return;
	case GMT_REC_STACK:
		dump_stack(f, rec, mono0);
		return;
	case GMT_REC_THREAD:
		dump_thread(f, rec, mono0);
		return;
	case GMT_REC_EVENTS:
		dump_events(f, rec, mono0);
		return;
	case GMT_REC_EVENT:
		dump_event(f, rec, mono0);
		return;
	case GMT_REC_LOST:
		dump_lost(f, rec, mono0);
		return;
	case GMT_REC_SYMBOL:
		dump_symbol(f, rec, mono0);
		return;
	case GMT_REC_NOTE:
		dump_note(f, rec, mono0);
		return;
	case GMT_REC_MEMINFO:
		dump_meminfo(f, rec, mono0);
		return;
	case GMT_REC_SAMPLE:
		dump_sample(f, rec, mono0);
		return;
	case GMT_REC_RANGE:
		dump_range(f, rec, mono0);
		return;
	case GMT_REC_PYFRAME:
		dump_pyframe(f, rec, mono0);
		return;
	case GMT_REC_FWSNAP:
		dump_fwsnap(f, rec, mono0);
		return;
	case GMT_REC_FWTRACE:
		dump_fwtrace(f, rec, mono0);
		return;
	case GMT_REC_FWSEG:
		dump_fwseg(f, rec, mono0);
		return;
	case GMT_REC_TRAILER:
		dump_trailer(f, rec, mono0);
		return;
	}
	fprintf(f, "%s\n", gmt_rec_type_name(rec->type));
}

static int dump_one(const char *path)
{
	int rc;
	struct gmt_reader *r = reader_open_cmd("dump", path, &rc);
	if (!r)
		return rc;
	FILE *f = stdout;
	const struct gmt_header *h = gmt_reader_header(r);
	fprintf(f,
		"HEADER version %u header_size %u endian %u (%s) features 0x%" PRIx32
		"%s pid %" PRIu32 " start_wall ",
		(unsigned)h->version, (unsigned)h->header_size, (unsigned)h->endian,
		h->endian == GMT_ENDIAN_LITTLE ? "little" : "?", h->features,
		h->features & GMT_FEAT_STACKS ? " (stacks)" : "", h->pid);
	wall(f, h->start_wall_ns);
	fprintf(f, " start_mono %" PRIu64 "\n", h->start_mono_ns);
	fprintf(f, "# times are seconds since start_mono; @N is the file offset\n");

	struct gmt_record rec;
	while (gmt_reader_next(r, &rec)) {
		dump_record(f, &rec, h->start_mono_ns);
		if (ferror(f)) { /* the reader went away (EPIPE): main says nothing */
			gmt_reader_close(r);
			return -1;
		}
	}

	const struct gmt_read_info *in = gmt_reader_info(r);
	fprintf(f,
		"END %" PRIu64 " chunks, %" PRIu64 " records, %" PRIu64 " events, %" PRIu64
		" of %" PRIu64 " bytes readable, %s",
		in->chunks, in->records, in->events, in->readable_end, in->file_size,
		in->complete ? "complete"
		: in->damage ? "INCOMPLETE (damaged)"
			     : "INCOMPLETE (no trailer at the end)");
	if (in->stop != GMT_STOP_NONE)
		fprintf(f, "; %s at offset %" PRIu64 ": %s, %" PRIu64 " bytes unreadable",
			in->stop == GMT_STOP_TORN      ? "torn tail"
			: in->stop == GMT_STOP_CORRUPT ? "CORRUPT"
						       : "read error",
			in->stop_offset, in->stop_msg, in->unreadable);
	if (in->unknown_chunks)
		fprintf(f,
			"; %" PRIu64 " chunks cut short by an unknown record tag (%" PRIu64
			" bytes skipped)",
			in->unknown_chunks, in->unknown_bytes);
	if (in->seq_gaps)
		fprintf(f, "; %" PRIu64 " chunk sequence gaps", in->seq_gaps);
	if (in->seq_dups)
		fprintf(f, "; %" PRIu64 " chunks repeated", in->seq_dups);
	if (in->damage & GMT_DAMAGE_TOTALS)
		fprintf(f, "; the trailer counts %" PRIu64 " events", in->trailer_events);
	fputc('\n', f);
	rc = reader_finish_cmd("dump", path, in);
	gmt_reader_close(r);
	return rc;
}

/* Several traces (one per rank): each in turn under a "==> PATH <==" line,
 * as head(1) does; the exit code is the worst of them. */
int cmd_dump(int argc, char **argv)
{
	const char **paths;
	int npaths;
	const struct option opts[] = {OPT_END()};
	int rc = opt_parse(&usage, opts, argc, argv, &paths, &npaths);
	if (rc >= 0)
		return rc;
	int worst = 0;
	for (int i = 0; i < npaths; i++) {
		if (npaths > 1)
			printf("%s==> %s <==\n", i ? "\n" : "", paths[i]);
		int one = dump_one(paths[i]);
		if (one < 0)
			break; /* stdout is gone */
		worst = one > worst ? one : worst;
	}
	free(paths);
	return worst;
}
