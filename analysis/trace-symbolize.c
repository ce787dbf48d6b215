/* Naming after the run, into the trace (trace.h, trace_symbolize): the
 * frames the trace does not name are named from the module files on this
 * machine and their SYMBOL records added to the file, so that it reads
 * anywhere. In place: whole chunks after the last one, never while the
 * traced process may still write it, never after a torn or bad chunk
 * (they would make the trace read as corrupt). Else into a copy. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/symbolize.h"
#include "reader/append.h"
#include "analysis/trace-records.h"

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The distinct native frames of the stack tree, sorted. */
static uint64_t *native_ips(const struct trace *t, size_t *n)
{
	uint64_t *v = xcalloc(t->nnodes + 1, sizeof(*v));
	size_t k = 0;
	for (size_t i = 0; i < t->nnodes; i++)
		if (t->nodes[i].ip && !GMT_IS_PYFRAME_IP(t->nodes[i].ip))
			v[k++] = t->nodes[i].ip;
	qsort(v, k, sizeof(*v), by_u64);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (!u || v[u - 1] != v[i])
			v[u++] = v[i];
	*n = u;
	return v;
}

/* Named by a SYMBOL record of the trace (not by this machine's files). */
static bool named_by_trace(struct trace *t, uint64_t ip)
{
	struct trace_symbol *sym = NULL;
	HASH_FIND(hh, t->symbols, &ip, sizeof(ip), sym);
	return sym && sym->function[0] && !sym->looked_up;
}

static void oom(void)
{
	xalloc_failed();
}

/* The SYMBOL records of every frame the trace does not name, and the
 * NOTEs that say what was done. */
static void add_names(struct trace *t, struct gmt_append *a, struct trace_symbolize *res)
{
	size_t n;
	uint64_t *ips = native_ips(t, &n);
	struct gmt_symbolizer *s = trace_symbolizer(t);
	res->frames = n;
	for (size_t i = 0; i < n; i++) {
		if (named_by_trace(t, ips[i])) {
			res->had++;
			continue;
		}
		struct gmt_symbol out;
		/* a return address: name the call, as the library does */
		if (!s || gmt_symbolize(s, ips[i] - 1, &out) != 0)
			continue;
		const struct trace_module *m = trace_module_at(t, ips[i]);
		if (gmt_append_symbol(a, ips[i], m ? m->id : 0, out.function, out.file, out.line) !=
		    0)
			oom();
		res->named++;
	}
	free(ips);
	struct gmt_symbolizer_stats st;
	gmt_symbolizer_stats(s, &st);
	res->cut = st.cut;
	char text[400];
	char host[256] = "this machine";
	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "this machine");
	host[sizeof(host) - 1] = 0;
	if (res->named) {
		snprintf(text, sizeof(text),
			 "%" PRIu64 " frames named after the run from the module files on %s "
			 "(gpumemtrace symbolize)",
			 res->named, host);
		if (gmt_append_note(a, 0, text) != 0)
			oom();
	}
	if (res->cut) {
		snprintf(text, sizeof(text),
			 "naming after the run stopped at its %" PRIu64
			 " s bound (GPUMEMTRACE_NAME_SECONDS): %" PRIu64
			 " frames were not looked up and show as module+offset",
			 t->name_seconds, res->cut);
		if (gmt_append_note(a, 1, text) != 0)
			oom();
	}
}

static int in_place(struct trace *t, struct gmt_append *a)
{
	const struct gmt_read_info *in = &t->info;
	if (in->stop != GMT_STOP_NONE || in->readable_end != in->file_size) {
		say_error(t->cmd,
			  "%s: its readable part ends at offset %" PRIu64
			  " (%s): names added after it would not be read; write a named copy "
			  "with 'gpumemtrace symbolize -o FILE TRACE'",
			  t->path, in->readable_end,
			  in->stop == GMT_STOP_TORN ? "a torn tail" : "a bad chunk");
		return EXIT_TRACE;
	}
	int fd = open(t->path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		say_error(t->cmd, "%s: cannot add the names: %s", t->path,
			  fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return EXIT_INPUT;
	}
	int rc = -1;
	if (gmt_trace_writer_alive(t->hdr.pid, st.st_dev, st.st_ino)) {
		say_error(t->cmd,
			  "%s: process %" PRIu32 " still has it open, and may write to it: name "
			  "its frames once it has ended",
			  t->path, t->hdr.pid);
		rc = EXIT_INPUT;
	} else if (gmt_append_write(a, fd, in->file_size) != 0) {
		say_error(t->cmd, "%s: cannot add the names: %s", t->path,
			  errno == EAGAIN ? "the file changed while it was read" : strerror(errno));
		rc = EXIT_INPUT;
	}
	if (close(fd) != 0 && rc < 0) {
		say_error(t->cmd, "%s: cannot add the names: %s", t->path, strerror(errno));
		rc = EXIT_INPUT;
	}
	return rc;
}

/* The readable part of the trace, then the records, written to fd. */
static int to_copy(struct trace *t, struct gmt_append *a, int fd)
{
	int in = open(t->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	char buf[1 << 16];
	uint64_t left = t->info.readable_end;
	while (in >= 0 && left) {
		ssize_t n = read(in, buf, left < sizeof(buf) ? left : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || write(fd, buf, (size_t)n) != n) {
			if (n == 0)
				errno = EIO; /* shorter than when it was read */
			break;
		}
		left -= (uint64_t)n;
	}
	int err = errno;
	if (in >= 0)
		close(in);
	if (in < 0 || left || gmt_append_write(a, fd, t->info.readable_end) != 0) {
		say_error(t->cmd, "cannot write the named copy of %s: %s", t->path,
			  strerror(left ? err : errno));
		return EXIT_INPUT;
	}
	return -1;
}

int trace_symbolize(struct trace *t, int out, struct trace_symbolize *res)
{
	memset(res, 0, sizeof(*res));
	struct gmt_append *a = gmt_append_new(t->hdr.version, t->last_seq + 1);
	if (!a)
		oom();
	const struct gmt_read_info *in = &t->info;
	if (out >= 0 && in->readable_end < in->file_size) {
		char text[400];
		snprintf(
		    text, sizeof(text),
		    "copied from %.200s up to offset %" PRIu64
		    " by gpumemtrace symbolize: the %" PRIu64 " bytes after it (%s) were left out",
		    t->path, in->readable_end, in->file_size - in->readable_end,
		    in->stop == GMT_STOP_TORN ? "a torn tail" : "a bad chunk and what followed");
		if (gmt_append_note(a, 1, text) != 0)
			oom();
	}
	add_names(t, a, res);
	int rc = -1;
	if (gmt_append_records(a) || out >= 0) {
		/* a fresh trailer only for a complete trace: one that was not
		 * (torn, damaged, no trailer) must not read as complete now */
		if (t->complete && in->stop == GMT_STOP_NONE && gmt_append_records(a) &&
		    gmt_append_trailer(a, t->trailer_end_ns, t->trailer_events, t->trailer_lost,
				       t->trailer_stack_nodes, t->trailer_reason) != 0)
			oom();
		rc = out >= 0 ? to_copy(t, a, out) : in_place(t, a);
		res->appended = rc < 0 && gmt_append_records(a);
	}
	gmt_append_free(a);
	return rc;
}
