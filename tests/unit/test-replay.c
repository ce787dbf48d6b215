/* analysis/replay.c's live-set replay against figures worked out by hand:
 * bytes, counts and peaks per device and per bucket, frees of unknown
 * addresses, replaced allocations, failed calls, VMM handles kept by a
 * mapping or a reference, and what on_change is told. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/replay.h"
#include "check.h"

static uint64_t seq_time;
static unsigned adds, ends;

static void on_change(void *ctx, const struct rp_live *l, bool counted)
{
	(void)ctx;
	(void)l;
	if (counted)
		adds++;
	else
		ends++;
}

/* One event at time t (100 ns apart); device -1 for host calls. */
static void ev(struct replay *rp, uint32_t api, int64_t dev, uint64_t ptr, uint64_t size,
	       uint64_t aux, uint64_t result, uint32_t flags)
{
	seq_time += 100;
	struct gmt_event e = {.index = seq_time / 100 - 1,
			      .time_ns = seq_time,
			      .tid = 1,
			      .api = api,
			      .flags = flags,
			      .result = result,
			      .device = dev,
			      .ptr = ptr,
			      .size = size,
			      .aux = aux,
			      .stack_id = 1};
	replay_apply(rp, &e);
}

static void expect_level(const char *what, const struct rp_level *lv, uint64_t bytes,
			 uint64_t count, uint64_t peak, uint64_t peak_time, uint64_t peak_seq)
{
	CHECK(lv->bytes == bytes && lv->count == count && lv->peak == peak &&
		  lv->peak_time_ns == peak_time && lv->peak_seq == peak_seq,
	      "%s: bytes %" PRIu64 " count %" PRIu64 " peak %" PRIu64 " at %" PRIu64
	      " (seq %" PRIu64 "), want %" PRIu64 " %" PRIu64 " %" PRIu64 " at %" PRIu64
	      " (seq %" PRIu64 ")",
	      what, lv->bytes, lv->count, lv->peak, lv->peak_time_ns, lv->peak_seq, bytes, count,
	      peak, peak_time, peak_seq);
}

int main(void)
{
	struct replay rp;
	replay_init(&rp);
	rp.on_change = on_change;
	/* seq, time: dev0 | dev1 | all devices (BK_DEVICE) */
	ev(&rp, GMT_API_cudaMalloc, 0, 0x1000, 100, 0, 0, 0);	/* 1 t100: 100 | - | 100 */
	ev(&rp, GMT_API_cudaMalloc, 1, 0x2000, 300, 0, 0, 0);	/* 2 t200: 100 | 300 | 400 */
	ev(&rp, GMT_API_cuMemAlloc_v2, 0, 0x3000, 50, 0, 0, 0); /* 3 t300: 150 | 300 | 450 */
	ev(&rp, GMT_API_cudaFree, 0, 0x1000, 0, 0, 0, 0);	/* 4: 50 | 300 | 350 */
	ev(&rp, GMT_API_cudaFree, 0, 0xdead, 0, 0, 0, 0);	/* 5: unknown address */
	ev(&rp, GMT_API_cudaMalloc, 0, 0x4000, 1000, 0, 2, 0);	/* 6: failed (result) */
	ev(&rp, GMT_API_cudaMalloc, 0, 0x4100, 1000, 0, 0, GMT_EV_FAILED); /* 7: failed (flag) */
	ev(&rp, GMT_API_cudaMallocHost, -1, 0x5000, 64, 0, 0, 0);	   /* 8: pinned 64 */
	/* 9: 0x3000 again, its free lost: 50 replaced by 70: 70 | 300 | 370 */
	ev(&rp, GMT_API_cudaMalloc, 0, 0x3000, 70, 0, 0, 0);
	ev(&rp, GMT_API_cudaFree, 0, 0, 0, 0, 0, 0); /* 10: cudaFree(0), a no-op */
	/* 11 t1100: stream-ordered counts as device memory: 270 | 300 | 570 */
	ev(&rp, GMT_API_cudaMallocAsync, 0, 0x6000, 200, 0, 0, 0);
	/* 12 t1200: a VMM handle on the device (aux 1): 4366 | 300 | 4666 */
	ev(&rp, GMT_API_cuMemCreate, 0, 0x77, 4096, 1, 0, 0);
	ev(&rp, GMT_API_cuMemMap, 0, 0x100000, 4096, 0x77, 0, 0); /* 13: mapped */
	ev(&rp, GMT_API_cuMemRelease, 0, 0x77, 0, 0, 0, 0);	  /* 14: no ref, still mapped */
	CHECK(replay_find(&rp, GMT_SPACE_VMM_HANDLE, 0x77) != NULL, "a mapped handle stays live");
	CHECK(rp.devs[0].lv.bytes == 4366, "dev0 with the mapped handle: %" PRIu64,
	      rp.devs[0].lv.bytes);
	ev(&rp, GMT_API_cuMemUnmap, 0, 0x100000, 4096, 0, 0, 0); /* 15: gone: 270 | 300 | 570 */
	CHECK(replay_find(&rp, GMT_SPACE_VMM_HANDLE, 0x77) == NULL, "unmapped and released: gone");
	ev(&rp, GMT_API_cuMemCreate, 0, 0x78, 8192, 0, 0, 0);  /* 16: on the host: vmm_host */
	ev(&rp, GMT_API_cudaFreeHost, -1, 0x5000, 0, 0, 0, 0); /* 17: pinned 0 */
	ev(&rp, GMT_API_cuMemFree_v2, 1, 0x2000, 0, 0, 0, 0);  /* 18: 270 | 0 | 270 */
	ev(&rp, 39, 0, 0x9000, 123, 0, 0, 0);		       /* 19: an id not in the list */
	ev(&rp, GMT_API_cuMemRelease, 0, 0x999, 0, 0, 0, 0);   /* 20: unknown handle */
	ev(&rp, GMT_API_cuMemRetainAllocationHandle, 0, 0x78, 0, 0, 0, 0); /* 21: 2 refs */
	ev(&rp, GMT_API_cuMemRelease, 0, 0x78, 0, 0, 0, 0);		   /* 22: 1 ref */
	CHECK(rp.buckets[BK_VMM_HOST].bytes == 8192, "retained handle still counted");
	ev(&rp, GMT_API_cuMemRelease, 0, 0x78, 0, 0, 0, 0); /* 23: 0 refs: gone */

	CHECK(rp.seq == 23, "seq %" PRIu64 ", want 23 (every event counts)", rp.seq);
	CHECK(rp.ndevs == 2 && rp.devs[0].ordinal == 0 && rp.devs[1].ordinal == 1, "devices: %zu",
	      rp.ndevs);
	/* dev0 peaked with the VMM handle at event 12 (t1200); dev1 at event 2 */
	expect_level("dev0", &rp.devs[0].lv, 270, 2, 4366, 1200, 12);
	expect_level("dev1", &rp.devs[1].lv, 0, 0, 300, 200, 2);
	expect_level("device", &rp.buckets[BK_DEVICE], 270, 2, 4666, 1200, 12);
	expect_level("pinned", &rp.buckets[BK_PINNED], 0, 0, 64, 800, 8);
	expect_level("vmm_host", &rp.buckets[BK_VMM_HOST], 0, 0, 8192, 1600, 16);
	expect_level("managed", &rp.buckets[BK_MANAGED], 0, 0, 0, 0, 0);
	/* event 5 (0xdead) and event 20 (handle 0x999) */
	CHECK(rp.unmatched_frees == 2, "unmatched frees %" PRIu64 ", want 2", rp.unmatched_frees);
	CHECK(rp.replaced == 1, "replaced %" PRIu64 ", want 1", rp.replaced);
	/* starts: events 1 2 3 8 9 11 12 16; ends: 4, 9's old entry, 15 17 18 23 */
	CHECK(adds == 8 && ends == 6, "on_change: %u starts, %u ends; want 8, 6", adds, ends);

	struct rp_live *l = replay_find(&rp, GMT_SPACE_ADDR, 0x3000);
	CHECK(l && l->size == 70 && l->seq == 9 && l->time_ns == 900 &&
		  l->api == GMT_API_cudaMalloc,
	      "0x3000 is event 9's 70 bytes");
	CHECK(replay_find(&rp, GMT_SPACE_ADDR, 0x1000) == NULL, "0x1000 freed");
	CHECK(replay_find(&rp, GMT_SPACE_ADDR, 0x4000) == NULL, "failed calls add nothing");
	CHECK(replay_find(&rp, GMT_SPACE_ADDR, 0x9000) == NULL, "unknown ids add nothing");
	/* the list keeps the order added: 0x3000 (event 9), then 0x6000 */
	struct rp_live *it, *tmp;
	uint64_t order[4];
	size_t n = 0;
	RP_EACH(&rp, GMT_SPACE_ADDR, it, tmp)
	{
		if (n < 4)
			order[n] = it->key;
		n++;
	}
	CHECK(n == 2 && order[0] == 0x3000 && order[1] == 0x6000, "live addresses in order added");

	/* Many entries: the index grows (64 slots at first) and keeps them all. */
	struct replay big;
	replay_init(&big);
	for (uint64_t i = 1; i <= 1000; i++) {
		struct gmt_event e = {.index = i,
				      .time_ns = i,
				      .api = GMT_API_cudaMalloc,
				      .ptr = i * 256,
				      .size = i,
				      .device = 2};
		replay_apply(&big, &e);
	}
	for (uint64_t i = 1; i <= 1000; i += 2) {
		struct gmt_event e = {.index = 1000 + i,
				      .time_ns = 1000 + i,
				      .api = GMT_API_cudaFree,
				      .ptr = i * 256,
				      .device = 2};
		replay_apply(&big, &e);
	}
	/* sum 1..1000 = 500500; odd sizes freed: 1+3+...+999 = 250000 */
	expect_level("1000 allocations", &replay_dev(&big, 2)->lv, 250500, 500, 500500, 1000, 1000);
	CHECK(replay_find(&big, GMT_SPACE_ADDR, 512) && !replay_find(&big, GMT_SPACE_ADDR, 256),
	      "even kept, odd freed");
	CHECK(big.unmatched_frees == 0, "no unmatched frees");
	replay_free(&big);
	replay_free(&rp);
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
