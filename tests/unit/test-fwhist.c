/* analysis/fwhist.c on traces written by the test-only trace builder: the
 * FWSNAP/FWTRACE/FWSEG records read back, a window whose start is rebuilt
 * from the segment state at its end (as memory_viz does), a second window
 * that carries on from the first, entries out of order skipped, and the
 * framework's wall-clock stamps put on the trace's clock. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/fwhist.h"
#include "analysis/trace.h"
#include "check.h"
#include "trace-file.h"

#define MiB  (1ull << 20)
#define SEG1 0x7f0000000000ull /* 20 MiB, cudaMalloc'd before the history began */
#define SEG2 0x7f0002000000ull /* 2 MiB, the window's own */
#define WALL 1700000000000000000ull
#define MONO 5000000000ull
#define US0  (WALL / 1000) /* the first entry's stamp: at MONO */

static const char *write_trace(void)
{
	struct tb *b = tb_new(NULL);
	tb_device(b, 0, "GPU 0", NULL, 0, 1024 * MiB, 9, 0, 12040);
	struct tb_event ev = {.time_ns = 1000,
			      .api = GMT_API_cudaMalloc,
			      .ptr = SEG1,
			      .size = 20 * MiB,
			      .stack_id = 0};
	tb_events_begin(b, 7, 1000);
	tb_event(b, &ev);
	tb_events_end(b);
	/* snapshot 1, at MONO + 10 us: the window's entries and the state */
	static const char *const keys[] = {"expandable_segments", "PYTORCH_CUDA_ALLOC_CONF"};
	static const char *const vals[] = {"False", "max_split_size_mb:128"};
	tb_fwsnap(b, 7, MONO + 10000, WALL + 10000, 1, GMT_FWSNAP_WHY_OOM, "torch",
		  GMT_FWSNAP_HISTORY | GMT_FWSNAP_PY_STACKS, 1000, 2, keys, vals);
	const struct tb_fw_entry e1[] = {
	    /* A (1 MiB) was live before the window: freed in it */
	    {GMT_FW_FREE_REQUESTED, SEG1, 1 * MiB, 0, US0 + 1, 3},
	    {GMT_FW_FREE_COMPLETED, SEG1, 1 * MiB, 0, US0 + 2, 3},
	    {GMT_FW_ALLOC, SEG1, 512 * 1024, 0, US0 + 3, 4},
	    {GMT_FW_SEGMENT_ALLOC, SEG2, 2 * MiB, 0, US0 + 4, 5},
	    {GMT_FW_ALLOC, SEG2, 1000, 0, US0 + 5, 5},
	    {GMT_FW_OOM, 7 * MiB, 40 * MiB, 0, US0 + 6, 6},
	};
	tb_fwtrace(b, 1, 0, GMT_FWTRACE_GAP, 6, e1);
	/* C (3 MiB at +10 MiB) was live before the window and still is */
	const struct tb_fw_block s1[] = {
	    {SEG1, 512 * 1024, 512 * 1024, GMT_FWBLOCK_ACTIVE_ALLOCATED, 4},
	    {SEG1 + 512 * 1024, 10 * MiB - 512 * 1024, 0, GMT_FWBLOCK_INACTIVE, 0},
	    {SEG1 + 10 * MiB, 3 * MiB, 3 * MiB, GMT_FWBLOCK_ACTIVE_ALLOCATED, 8},
	    {SEG1 + 13 * MiB, 7 * MiB, 0, GMT_FWBLOCK_INACTIVE, 0},
	};
	tb_fwseg(b, 1, 0, SEG1, 20 * MiB, 0, 0, 2, 4, s1);
	const struct tb_fw_block s2[] = {
	    {SEG2, 1024, 1000, GMT_FWBLOCK_ACTIVE_ALLOCATED, 5},
	    {SEG2 + 1024, 2 * MiB - 1024, 0, GMT_FWBLOCK_INACTIVE, 0},
	};
	tb_fwseg(b, 1, 0, SEG2, 2 * MiB, 0, GMT_FWSEG_SMALL, 5, 1, s2);
	/* the rest of SEG2's blocks, as a continued record */
	tb_fwseg(b, 1, 0, SEG2, 2 * MiB, 0, GMT_FWSEG_SMALL | GMT_FWSEG_CONTINUED, 5, 1, s2 + 1);
	/* snapshot 2, at exit: carries on (no gap), C freed, D pending */
	tb_fwsnap(b, 7, MONO + 20000, WALL + 20000, 2, GMT_FWSNAP_WHY_EXIT, "torch",
		  GMT_FWSNAP_HISTORY | GMT_FWSNAP_PY_STACKS, 1000, 0, NULL, NULL);
	const struct tb_fw_entry e2[] = {
	    {GMT_FW_FREE_REQUESTED, SEG1 + 10 * MiB, 3 * MiB, 0, US0 + 11, 8},
	    {GMT_FW_FREE_COMPLETED, SEG1 + 10 * MiB, 3 * MiB, 0, US0 + 12, 8},
	    {GMT_FW_FREE_REQUESTED, SEG2, 1000, 0, US0 + 13, 5},
	};
	tb_fwtrace(b, 2, 0, 0, 3, e2);
	const struct tb_fw_block s3[] = {
	    {SEG2, 1024, 1000, GMT_FWBLOCK_ACTIVE_PENDING_FREE, 5},
	    {SEG2 + 1024, 2 * MiB - 1024, 0, GMT_FWBLOCK_INACTIVE, 0},
	};
	tb_fwseg(b, 2, 0, SEG2, 2 * MiB, 0, GMT_FWSEG_SMALL, 5, 2, s3);
	const struct tb_fw_block s4[] = {
	    {SEG1, 512 * 1024, 512 * 1024, GMT_FWBLOCK_ACTIVE_ALLOCATED, 4},
	    {SEG1 + 512 * 1024, 20 * MiB - 512 * 1024, 0, GMT_FWBLOCK_INACTIVE, 0},
	};
	tb_fwseg(b, 2, 0, SEG1, 20 * MiB, 0, 0, 2, 2, s4);
	/* a straggler of snapshot 1 after snapshot 2's: skipped */
	tb_fwtrace(b, 1, 0, 0, 1, e1 + 2);
	tb_trailer(b, MONO + 30000, 1, 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, "fwhist.gmt");
	tb_free(b);
	return path;
}

static void check_snapshots(struct trace *t)
{
	CHECK(fwhist_present(t), "the history is there");
	const struct fwhist *h = t->fw;
	CHECK(h && h->nsnaps == 2 && h->entries == 9 && h->out_of_order == 1,
	      "2 snapshots, 9 entries read, 1 skipped (%zu, %" PRIu64 ", %" PRIu64 ")",
	      h ? h->nsnaps : 0, h ? h->entries : 0, h ? h->out_of_order : 0);
	const struct fw_snapshot *s1 = fwhist_snapshot(t, 1);
	CHECK(s1 && s1->reason == GMT_FWSNAP_WHY_OOM && !strcmp(s1->source, "torch") &&
		  s1->max_entries == 1000 && s1->gap && s1->entries == 6,
	      "snapshot 1's head");
	CHECK(s1 && !strcmp(fwhist_setting(s1, "PYTORCH_CUDA_ALLOC_CONF"), "max_split_size_mb:128"),
	      "snapshot 1's settings");
	CHECK(s1 && s1->nsegs == 2 && s1->segs[0].address == SEG1 && s1->segs[1].address == SEG2 &&
		  s1->segs[1].nblocks == 2 && s1->segs[1].flags == GMT_FWSEG_SMALL,
	      "snapshot 1: 2 segments, the continued record merged");
	struct fw_state_figures f;
	fwhist_figures(s1, 0, &f);
	CHECK(f.reserved == 22 * MiB && f.segments == 2 &&
		  f.allocated == 512 * 1024 + 3 * MiB + 1024 &&
		  f.allocated_requested == 512 * 1024 + 3 * MiB + 1000 &&
		  f.inactive_split == 17 * MiB + 2 * MiB - 1024 - 512 * 1024 + 0,
	      "snapshot 1's figures: reserved %" PRIu64 " allocated %" PRIu64 " split %" PRIu64,
	      f.reserved, f.allocated, f.inactive_split);
	const struct fw_snapshot *last = fwhist_last(t, 0);
	CHECK(last && last->seq == 2 && last->nsegs == 2 && last->segs[0].address == SEG1,
	      "the last state is snapshot 2's, segments sorted by address");
	fwhist_figures(last, -1, &f);
	CHECK(f.active_pending == 1024 && f.allocated == 512 * 1024, "snapshot 2: pending free");
	/* the first entry's stamp (US0 + 1) is 9 us before snapshot 1's wall */
	CHECK(fwhist_time_ns(s1, US0 + 1) == MONO + 1000, "time_us on the trace's clock: %" PRIu64,
	      fwhist_time_ns(s1, US0 + 1));
	CHECK(fwhist_time_ns(s1, 0) == 0, "no stamp, no time");
}

struct seen {
	int n, starts;
	uint64_t allocated[16], reserved[16], tensors[16];
	bool before_c; /* C was live and rebuilt as before the window */
};

static void on_entry(void *ctx, const struct fw_event *ev, const struct fw_state *st)
{
	struct seen *s = ctx;
	const struct fw_dev *d = fw_state_dev(st, 0);
	if (s->n < 16 && d) {
		s->allocated[s->n] = d->allocated;
		s->reserved[s->n] = d->reserved;
		s->tensors[s->n] = d->tensors;
	}
	s->starts += ev->window_start;
	if (s->n == 0) {
		struct fw_tensor *x;
		struct fw_key k;
		memset(&k, 0, sizeof k);
		k.device = 0;
		k.addr = SEG1 + 10 * MiB;
		HASH_FIND(hh, st->tensors, &k, sizeof k, x);
		s->before_c = x && x->before && x->size == 3 * MiB && x->stack_id == 8;
	}
	s->n++;
}

static void check_replay(struct trace *t)
{
	struct seen s;
	memset(&s, 0, sizeof s);
	CHECK(fwhist_replay(t, on_entry, &s) == -1, "replay ok");
	CHECK(s.n == 9 && s.starts == 1, "9 entries, one rebuilt start (%d, %d)", s.n, s.starts);
	CHECK(s.before_c, "C rebuilt as live before the window, with its block's stack");
	/* A (1 MiB) + C (3 MiB) live at the start; reserved 20 MiB */
	static const uint64_t alloc[9] = {3 * MiB,
					  3 * MiB,
					  3 * MiB + 512 * 1024,
					  3 * MiB + 512 * 1024,
					  3 * MiB + 512 * 1024 + 1000,
					  3 * MiB + 512 * 1024 + 1000,
					  512 * 1024 + 1000,
					  512 * 1024 + 1000,
					  512 * 1024};
	static const uint64_t res[9] = {20 * MiB, 20 * MiB, 20 * MiB, 22 * MiB, 22 * MiB,
					22 * MiB, 22 * MiB, 22 * MiB, 22 * MiB};
	static const uint64_t tens[9] = {2, 1, 2, 2, 3, 3, 3, 2, 2};
	for (int i = 0; i < 9; i++)
		CHECK(s.allocated[i] == alloc[i] && s.reserved[i] == res[i] &&
			  s.tensors[i] == tens[i],
		      "after entry %d: allocated %" PRIu64 " (want %" PRIu64 "), reserved %" PRIu64
		      " (want %" PRIu64 "), tensors %" PRIu64 " (want %" PRIu64 ")",
		      i, s.allocated[i], alloc[i], s.reserved[i], res[i], s.tensors[i], tens[i]);
	CHECK(t->fw->inconsistent == 0, "every entry fit: %" PRIu64, t->fw->inconsistent);
}

/* A trace without the records: nothing there, and the replay is a no-op. */
static void check_none(void)
{
	struct tb *b = tb_new(NULL);
	tb_trailer(b, 10, 0, 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, "none.gmt");
	tb_free(b);
	struct trace t;
	CHECK(trace_open(&t, "test", path) == -1, "opens");
	CHECK(!fwhist_present(&t) && !fwhist_last(&t, -1), "no history");
	CHECK(fwhist_replay(&t, on_entry, NULL) == -1, "replay of nothing");
	trace_close(&t);
}

int main(void)
{
	const char *path = write_trace();
	struct trace t;
	int rc = trace_open(&t, "test", path);
	CHECK(rc == -1, "trace_open: %d", rc);
	if (rc == -1) {
		check_snapshots(&t);
		check_replay(&t);
		trace_close(&t);
	}
	check_none();
	return failures ? 1 : 0;
}
