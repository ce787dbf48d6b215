/* analysis/report-base.c, shared by growth, fragmentation and oom:
 * opening several traces, the per-trace header lines, durations and times,
 * device totals. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report-base.h"
#include "cli/report-print.h"
#include "check.h"
#include "trace-file.h"

static void expect_str(const char *what, const char *got, const char *want)
{
	CHECK(strcmp(got, want) == 0, "%s: '%s', want '%s'", what, got, want);
}

static void times(void)
{
	char b[32];
	expect_str("999", rb_dur(b, 999), "999 ns");
	expect_str("1500", rb_dur(b, 1500), "1.5 us");
	expect_str("-1500", rb_dur(b, -1500), "1.5 us"); /* a duration has no sign */
	expect_str("2.5e6", rb_dur(b, 2500000), "2.5 ms");
	expect_str("1.234e9", rb_dur(b, 1234000000), "1.234 s");
	expect_str("2m05.3s", rb_dur(b, 125300000000ll), "2m05.3s");
	expect_str("1h02m03s", rb_dur(b, 3723000000000ll), "1h02m03s");
	expect_str("+1500", rb_time(b, 1500), "+1.5 us");
	expect_str("-2.5e6", rb_time(b, -2500000), "-2.5 ms");
	expect_str("+0", rb_time(b, 0), "+0 ns");
}

static const char *write_trace(void)
{
	struct tb_header h = {.start_mono_ns = 1000, .pid = 7};
	struct tb *b = tb_new(&h);
	const char *argv[] = {"python3", "train.py"};
	tb_process(b, 4242, 1, 0, "host", "/usr/bin/python3", 2, argv, 0, NULL, NULL);
	tb_device(b, 0, "GPU 0", NULL, 0, 85899345920ull, 9, 0, 12040);
	tb_events_begin(b, 1, 2000);
	struct tb_event e = {.time_ns = 2000, .api = GMT_API_cudaMalloc, .ptr = 0x10, .size = 8};
	tb_event(b, &e);
	e = (struct tb_event){.time_ns = 2501000, .api = GMT_API_cudaFree, .ptr = 0x10};
	tb_event(b, &e);
	tb_events_end(b);
	tb_lost(b, 1, 3, 2600000);
	tb_trailer(b, 3000000, 2, 3, 0, GMT_END_EXIT);
	const char *path = trace_file(b, "g.gmt");
	tb_free(b);
	return path;
}

static void traces(void)
{
	const char *path = write_trace();
	struct rb_opts o = {.paths = (const char *[]){path, path}, .npaths = 2};
	struct trace *ts;
	CHECK(rb_open_all("growth", &o, &ts) == -1, "two traces opened");
	CHECK(rb_dev_total(&ts[0], 0) == 85899345920ull, "device 0's total");
	CHECK(rb_dev_total(&ts[0], 5) == 0, "an unknown device: 0");
	/* --device: 0 is in both traces; 5 in neither (one error line, exit 2) */
	o.has_device = true;
	o.device = 0;
	CHECK(rb_check_device("growth", &o, ts) == -1, "--device 0: fine");
	o.device = 5;
	CHECK(rb_check_device("growth", &o, ts) == EXIT_USAGE, "--device 5: a usage error");
	o.has_device = false;
	char b[64];
	expect_str("no stack", rb_site(&ts[0], 0, b, sizeof(b)), "(no stack)");

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cli_human_head(f, &ts[0]);
	fclose(f);
	/* the trace's duration, as summary's: the trailer at 3000000, 1000 after
	 * the start (the events end at 2501000) */
	char want[512];
	snprintf(want, sizeof(want),
		 "trace %s (pid 4242, complete): python3 train.py\n"
		 "  2 events over 3.0 ms, 3 LOST: the figures below undercount\n",
		 path);
	expect_str("human head", text, want);
	free(text);
	f = open_memstream(&text, &len);
	cli_json_head(f, &ts[0]);
	fclose(f);
	snprintf(
	    want, sizeof(want),
	    "\"path\": \"%s\", \"pid\": 4242, \"command\": \"python3 train.py\", \"complete\": "
	    "true, \"torn_tail\": false, \"corrupt\": false, \"events\": 2, \"lost_events\": 3, "
	    "\"duration_ns\": 2999000",
	    path);
	expect_str("json head", text, want);
	free(text);
	CHECK(rb_finish_all(ts, 2, 0) == 0, "finish: 0");

	o.paths = (const char *[]){path, "/nonexistent/x.gmt"};
	CHECK(rb_open_all("growth", &o, &ts) == EXIT_INPUT, "a missing trace: EXIT_INPUT");
}

/* cli_wrap: lines within the width at spaces, a hanging indent, UTF-8 counted
 * as one column, a word longer than a line whole, the text's own newlines. */
static void wrap(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cli_wrap(f, 2, 24, "case: one two three four five six seven");
	cli_wrap(f, 0, 20, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 aaaaaaaaaa bbbb cc");
	cli_wrap(f, 0, 20, "x averyveryverylongwordthatdoesnotfit y");
	cli_wrap(f, 1, 30, "a\nb");
	fclose(f);
	expect_str("wrap", text,
		   "  case: one two three\n    four five six seven\n"
		   "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 aaaaaaaaaa bbbb\n  cc\n"
		   "x\n  averyveryverylongwordthatdoesnotfit\n  y\n"
		   " a\n b\n");
	free(text);
}

int main(void)
{
	wrap();
	times();
	traces();
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cli_json_s(f, "a\"b");
	fclose(f);
	expect_str("json string", text, "\"a\\\"b\"");
	free(text);
	setenv("LC_ALL", "en_US.UTF-8", 1);
	CHECK(rb_utf8(), "LC_ALL=en_US.UTF-8: UTF-8");
	setenv("LC_ALL", "", 1);
	setenv("LC_CTYPE", "C", 1);
	CHECK(!rb_utf8(), "LC_CTYPE=C: not UTF-8");
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
