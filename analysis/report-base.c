/* What the reports over several traces share: see report-base.h. */
#include "analysis/report-base.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int rb_open_all(const char *cmd, const struct rb_opts *o, struct trace **out)
{
	struct trace *ts = xrealloc(NULL, (size_t)o->npaths * sizeof(*ts));
	memset(ts, 0, (size_t)o->npaths * sizeof(*ts));
	for (int i = 0; i < o->npaths; i++) {
		int rc = trace_open(&ts[i], cmd, o->paths[i]);
		if (rc >= 0) {
			for (int j = 0; j < i; j++)
				trace_close(&ts[j]);
			free(ts);
			return rc;
		}
		ts[i].site_opts = o->sites;
		ts[i].short_names = !o->json;
	}
	*out = ts;
	return -1;
}

/* The devices a trace has, "0, 1", into buf ("none" without any). */
static const char *dev_list(const struct trace *t, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = 0;
	for (size_t i = 0; i < t->ndevs && len + 24 < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%" PRId64, i ? ", " : "",
					t->devs[i].ordinal);
	return t->ndevs ? buf : "none";
}

int rb_check_device(const char *cmd, const struct rb_opts *o, struct trace *ts)
{
	if (!o->has_device)
		return -1;
	for (int i = 0; i < o->npaths; i++) {
		if (trace_device(&ts[i], o->device))
			continue;
		char devs[256];
		say_error(cmd, "%s: no device %" PRId64 " in the trace (its devices: %s)",
			  o->paths[i], o->device, dev_list(&ts[i], devs, sizeof(devs)));
		return EXIT_USAGE;
	}
	return -1;
}

int rb_finish_all(struct trace *ts, int n, int rc)
{
	int worst = rc;
	for (int i = 0; i < n; i++) {
		int r = trace_finish(&ts[i]);
		if (r > worst)
			worst = r;
		trace_close(&ts[i]);
	}
	free(ts);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (errno != EPIPE) {
			say_error(NULL, "cannot write the output: %s", strerror(errno));
			if (worst < EXIT_INPUT)
				worst = EXIT_INPUT;
		}
	}
	return worst;
}

const char *rb_dur(char *buf, int64_t ns)
{
	uint64_t a = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
	double v = (double)a;
	if (a < 1000)
		snprintf(buf, 32, "%" PRIu64 " ns", a);
	else if (a < 1000000)
		snprintf(buf, 32, "%.1f us", v / 1e3);
	else if (a < 1000000000)
		snprintf(buf, 32, "%.1f ms", v / 1e6);
	else if (a < 60000000000ull)
		snprintf(buf, 32, "%.3f s", v / 1e9);
	else if (a < 3600000000000ull)
		snprintf(buf, 32, "%um%04.1fs", (unsigned)(a / 60000000000ull),
			 (double)(a % 60000000000ull) / 1e9);
	else
		snprintf(buf, 32, "%uh%02um%02us", (unsigned)(a / 3600000000000ull),
			 (unsigned)(a / 60000000000ull % 60), (unsigned)(a / 1000000000ull % 60));
	return buf;
}

const char *rb_time(char *buf, int64_t ns)
{
	char tmp[32];
	snprintf(buf, 32, "%c%s", ns < 0 ? '-' : '+', rb_dur(tmp, ns));
	return buf;
}

const char *rb_site(struct trace *t, uint64_t stack_id, char *buf, size_t size)
{
	struct trace_frame fr;
	if (stack_id == 0 || !trace_site(t, stack_id, &fr)) {
		snprintf(buf, size, "(no stack)");
		return buf;
	}
	return trace_frame_text(&fr, buf, size);
}

const char *rb_env(const struct trace *t, const char *key)
{
	for (size_t i = 0; i < t->nenv; i++)
		if (strcmp(t->env[i].key, key) == 0)
			return t->env[i].value;
	return NULL;
}

uint64_t rb_dev_total(const struct trace *t, int64_t ordinal)
{
	for (size_t i = 0; i < t->ndevs; i++)
		if (t->devs[i].ordinal == ordinal)
			return t->devs[i].total_bytes;
	return 0;
}

bool rb_utf8(void)
{
	const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
	for (int i = 0; i < 3; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return strcasestr(v, "utf-8") || strcasestr(v, "utf8");
	}
	return false;
}
