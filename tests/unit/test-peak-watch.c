/* The library's peak watch (preload/peakwatch.c, included here) keeps the
 * device bytes and their high that summary's replay (analysis/replay.c)
 * keeps: the same events go to both and the figures are compared after each
 * one, for a few known sequences and for random ones (allocations, frees,
 * host-located and device handles, maps, unmaps of ranges, retains by
 * handle and by address, imports, failed calls, reused addresses). */
#include "preload/peakwatch.c"

#include <stdio.h>

#include "analysis/replay.h"
#include "check.h"

#define MiB (1ull << 20)
enum { DEVS = 2 };

static struct replay rp;
static uint64_t events;

static void reset(void)
{
	replay_free(&rp);
	replay_init(&rp);
	gmt_peakwatch_fork_child(); /* empties the watch */
	gmt_sample_asks.running = 1;
}

static void feed(uint32_t api, uint32_t result, int32_t dev, uint64_t ptr, uint64_t size,
		 uint64_t aux)
{
	struct {
		struct gmt_ring_hdr h;
		struct gmt_raw_event e;
	} r = {.h.type = GMT_RING_EVENT,
	       .e = {.api = (uint16_t)api,
		     .result = result,
		     .device = dev,
		     .ptr = ptr,
		     .size = size,
		     .aux = aux}};
	gmt_sampler_observe(&r.h);
	struct gmt_event e = {.index = events,
			      .time_ns = ++events,
			      .tid = 1,
			      .api = api,
			      .flags = result ? GMT_EV_FAILED : 0,
			      .result = result,
			      .device = dev,
			      .ptr = ptr,
			      .size = size,
			      .aux = aux};
	replay_apply(&rp, &e);
}

/* Whether the watch's figures are the replay's; says where they differ. */
static bool agree(const char *what, long step)
{
	bool ok = true;
	for (int d = 0; d < DEVS; d++) {
		struct rp_level lv = {0};
		for (size_t i = 0; i < rp.ndevs; i++)
			if (rp.devs[i].ordinal == d)
				lv = rp.devs[i].lv;
		CHECK(pk.bytes[d] == lv.bytes && pk.high[d] == lv.peak,
		      "%s, step %ld, device %d: watch %llu (high %llu), replay %llu (peak %llu)",
		      what, step, d, (unsigned long long)pk.bytes[d],
		      (unsigned long long)pk.high[d], (unsigned long long)lv.bytes,
		      (unsigned long long)lv.peak);
		ok = ok && pk.bytes[d] == lv.bytes && pk.high[d] == lv.peak;
	}
	return ok;
}

/* t-peak-agree's program: the handle released while mapped is held. */
static void known_sequences(void)
{
	uint64_t va = 0x7f0000000000ull;
	reset();
	feed(GMT_API_cuMemCreate, 0, -1, 0x100, 64 * MiB, 2); /* on the host */
	feed(GMT_API_cuMemCreate, 0, 0, 0x101, 16 * MiB, GMT_LOCATION_DEVICE);
	feed(GMT_API_cuMemAddressReserve, 0, 0, va, 32 * MiB, 0);
	feed(GMT_API_cuMemMap, 0, 0, va, 16 * MiB, 0x101);
	feed(GMT_API_cuMemRelease, 0, 0, 0x101, 0, 0);
	CHECK(pk.bytes[0] == 16 * MiB, "released while mapped: %llu",
	      (unsigned long long)pk.bytes[0]);
	feed(GMT_API_cuMemAlloc_v2, 0, 0, va + 64 * MiB, 8 * MiB, 0);
	CHECK(pk.high[0] == 24 * MiB, "peak: %llu", (unsigned long long)pk.high[0]);
	feed(GMT_API_cuMemUnmap, 0, 0, va, 16 * MiB, 0);
	CHECK(pk.bytes[0] == 8 * MiB, "after the unmap: %llu", (unsigned long long)pk.bytes[0]);
	agree("t-peak-agree", 0);

	/* Retained by address, released twice, unmapped: t-cli-vmm's 0x33. */
	reset();
	feed(GMT_API_cuMemCreate, 0, 0, 0x33, 4 * MiB, GMT_LOCATION_DEVICE);
	feed(GMT_API_cuMemMap, 0, 0, va, 4 * MiB, 0x33);
	feed(GMT_API_cuMemRetainAllocationHandle, 0, 0, 0x999, 0, va + 256);
	feed(GMT_API_cuMemRelease, 0, 0, 0x33, 0, 0);
	feed(GMT_API_cuMemUnmap, 0, 0, va, 4 * MiB, 0);
	CHECK(pk.bytes[0] == 4 * MiB, "retained: %llu", (unsigned long long)pk.bytes[0]);
	feed(GMT_API_cuMemRelease, 1, 0, 0x33, 0, 0); /* failed: changes nothing */
	CHECK(pk.bytes[0] == 4 * MiB, "failed release: %llu", (unsigned long long)pk.bytes[0]);
	feed(GMT_API_cuMemRelease, 0, 0, 0x33, 0, 0);
	CHECK(pk.bytes[0] == 0, "balanced: %llu", (unsigned long long)pk.bytes[0]);
	agree("retain", 0);
}

static uint64_t rng = 88172645463325252ull;
static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

/* Whether [va, va + size) overlaps a mapping other than one at va: the
 * driver refuses that (one at va is a mapping whose unmap was lost). */
static bool overlaps(uint64_t va, uint64_t size)
{
	struct rp_map *m, *mt;
	HASH_ITER(hh, rp.maps, m, mt)
	{
		if (m->va != va && m->va < va + size && m->va + m->size > va)
			return true;
	}
	return false;
}

static void random_events(long n)
{
	const uint64_t base = 0x7f0000000000ull;
	reset();
	for (long i = 0; i < n; i++) {
		uint32_t res = rnd(20) == 0;
		uint64_t addr = base + rnd(16) * 2 * MiB, h = 0x100 + rnd(12);
		uint64_t sz = (1 + rnd(3)) * 2 * MiB;
		bool host = rnd(4) == 0;
		switch (rnd(10)) {
		case 0:
			feed(GMT_API_cuMemAlloc_v2, res, rnd(3) ? 0 : 1, addr, (1 + rnd(4)) * MiB,
			     0);
			break;
		case 1:
			feed(GMT_API_cuMemAllocHost_v2, res, -1, addr, MiB, 0);
			break;
		case 2:
			feed(GMT_API_cuMemFree_v2, res, 0, rnd(8) ? addr : 0, 0, 0);
			break;
		case 3:
			feed(GMT_API_cuMemCreate, res, host ? -1 : 0, h, sz, host ? 2 : 1);
			break;
		case 4:
			feed(GMT_API_cuMemRelease, res, 0, h, 0, 0);
			break;
		case 5:
			feed(GMT_API_cuMemMap, res || overlaps(addr, sz), 0, addr, sz, h);
			break;
		case 6:
			feed(GMT_API_cuMemUnmap, res, 0, addr, rnd(5) * 2 * MiB, 0);
			break;
		case 7:
			feed(GMT_API_cuMemRetainAllocationHandle, res, 0, rnd(2) ? h : 0x999, 0,
			     addr + rnd(4) * MiB);
			break;
		case 8:
			feed(GMT_API_cuMemImportFromShareableHandle, res, 0, h, 2 * MiB, 1);
			break;
		case 9:
			feed(GMT_API_cuMemAllocAsync, res, 0, addr, MiB, 0);
			break;
		}
		if (!agree("random", i))
			return;
		if (rnd(5000) == 0) /* start over now and then: many small states */
			reset();
	}
}

int main(void)
{
	replay_init(&rp);
	known_sequences();
	random_events(300000);
	replay_free(&rp);
	gmt_peakwatch_fork_child();
	return failures ? 1 : 0;
}
