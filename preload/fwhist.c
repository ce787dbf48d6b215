/* A framework allocator's own view into the trace (FWSNAP, FWTRACE and
 * FWSEG records): the entry points the helper of `gpumemtrace run
 * --framework-history` (python/counters/sitecustomize.py) calls through
 * ctypes with PyTorch's torch.cuda.memory._snapshot(), flattened.
 *
 * Each call copies what it is given into the calling thread's ring, in
 * records of at most FW_RING_BYTES, and returns; the flush thread interns
 * the stacks and encodes (preload/writer.c). Nothing here allocates, except
 * naming a frame the first time (gpumemtrace_fw_frames_v1), which the
 * Python frames share. A ring that stays full counts the record as lost. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "common/fwhist.h"
#include "preload/clock.h"
#include "preload/exports.h"
#include "preload/ring.h"
#include "preload/tracer.h"

#define GMT_EXPORT __attribute__((visibility("default")))

enum {
	FW_RING_BYTES = 16384, /* a ring holds at least 64 KiB */
	FW_FRAMES_MAX = 128,   /* frames kept per entry, innermost first */
	FW_SETTINGS_MAX = 32,
	FW_KEY_MAX = 128,
	FW_VALUE_MAX = 256,
	FW_SOURCE_MAX = 64,
};

/* The frames' PYFRAME ids: ids[i] names (functions[i], files[i], lines[i]),
 * the same id as the program's own Python frame of that name has. 0: not
 * named (out of memory). */
GMT_EXPORT void gpumemtrace_fw_frames_v1(size_t n, const char *const *functions,
					 const char *const *files, const uint64_t *lines,
					 uint64_t *ids)
{
	for (size_t i = 0; i < n; i++)
		ids[i] = gmt_python_name_id(functions[i], files[i], lines[i]);
}

static size_t cut(const char *s, size_t max)
{
	return s ? strnlen(s, max) : 0;
}

/* A snapshot begins (FWSNAP): its settings as text, at most
 * FW_SETTINGS_MAX, keys cut at FW_KEY_MAX bytes and values at
 * FW_VALUE_MAX. */
GMT_EXPORT void gpumemtrace_fw_snapshot_v1(uint64_t seq, unsigned reason, const char *source,
					   uint64_t flags, uint64_t max_entries, size_t n,
					   const char *const *keys, const char *const *values)
{
	int saved_errno = errno;
	if (!keys || !values)
		n = 0;
	if (n > FW_SETTINGS_MAX)
		n = FW_SETTINGS_MAX;
	size_t slen = cut(source, FW_SOURCE_MAX);
	size_t body = sizeof(uint32_t) + GMT_FW_SNAP_HEAD_MAX + slen;
	for (size_t i = 0; i < n; i++)
		body +=
		    2 * GMT_VARINT_MAX + cut(keys[i], FW_KEY_MAX) + cut(values[i], FW_VALUE_MAX);
	size_t len;
	uint8_t *b = gmt_record_begin(GMT_RING_FWSNAP, body, &len);
	if (b) {
		struct timespec wall;
		clock_gettime(CLOCK_REALTIME, &wall);
		uint64_t now = gmt_now_ns();
		uint64_t wall_ns = (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec;
		/* the body after the tag and tid, which the flush thread adds;
		 * its length first */
		uint8_t *p = gmt_fw_put_snap_rest(b + sizeof(uint32_t), now, wall_ns, seq, reason,
						  source, slen, flags, max_entries, n);
		for (size_t i = 0; i < n; i++)
			p = gmt_fw_put_setting(p, keys[i], cut(keys[i], FW_KEY_MAX), values[i],
					       cut(values[i], FW_VALUE_MAX));
		uint32_t blen = (uint32_t)(p - b - sizeof(uint32_t));
		memcpy(b, &blen, sizeof blen);
		gmt_record_end(len);
	}
	errno = saved_errno;
}

/* Copies up to FW_FRAMES_MAX of an entry's frame ids as stack ips; 0 ids
 * (frames that could not be named) are left out. Returns how many. */
static uint16_t put_frames(uint64_t *out, const uint64_t *ids, uint64_t n)
{
	uint16_t k = 0;
	for (uint64_t i = 0; ids && i < n && k < FW_FRAMES_MAX; i++)
		if (ids[i])
			out[k++] = GMT_PYFRAME_IP(ids[i]);
	return k;
}

static size_t kept(uint64_t nframes)
{
	return nframes < FW_FRAMES_MAX ? (size_t)nframes : FW_FRAMES_MAX;
}

enum { ENTRY_WORDS = 6, SEG_WORDS = 7, BLOCK_WORDS = 5 };

/* n entries of one device's history, oldest first. entries holds n x 6
 * values: action (GMT_FW_*), addr (GMT_FW_OOM: the device's free bytes),
 * size, stream, time_us, nframes; frames holds every entry's nframes frame
 * ids (gpumemtrace_fw_frames_v1), innermost first, entry by entry. flags
 * (GMT_FWTRACE_GAP) go with the first entry. */
GMT_EXPORT void gpumemtrace_fw_entries_v1(uint64_t seq, int64_t device, uint64_t flags, size_t n,
					  const uint64_t *entries, const uint64_t *frames)
{
	int saved_errno = errno;
	size_t i = 0, f = 0; /* the next entry, and its first frame */
	while (entries && i < n) {
		size_t body = sizeof(struct gmt_raw_fwtrace), k = i, fk = f;
		for (; k < n; k++) {
			const uint64_t *v = &entries[k * ENTRY_WORDS];
			size_t add = sizeof(struct gmt_raw_fwentry) + kept(v[5]) * sizeof(uint64_t);
			if (k > i && body + add > FW_RING_BYTES)
				break;
			body += add;
			fk += (size_t)v[5];
		}
		size_t len;
		struct gmt_raw_fwtrace *r = gmt_record_begin(GMT_RING_FWTRACE, body, &len);
		if (r) {
			*r = (struct gmt_raw_fwtrace){
			    seq, flags, entries[i * ENTRY_WORDS + 4], device, (uint32_t)(k - i), 0};
			struct gmt_raw_fwentry *e = (void *)(r + 1);
			uint64_t *ips = (void *)(e + (k - i));
			size_t at = f;
			for (size_t j = i; j < k; j++, e++) {
				const uint64_t *v = &entries[j * ENTRY_WORDS];
				uint16_t nf = put_frames(ips, frames ? frames + at : NULL, v[5]);
				*e = (struct gmt_raw_fwentry){v[1],	      v[2], v[3], v[4],
							      (uint32_t)v[0], nf,   0};
				ips += nf;
				at += (size_t)v[5];
			}
			gmt_record_end(len);
		}
		i = k;
		f = fk;
		flags = 0;
	}
	errno = saved_errno;
}

/* One segment of a snapshot and its n blocks, in address order. segment
 * holds 7 values: address, total_size, stream, flags (GMT_FWSEG_*), pool_a,
 * pool_b, nframes, and segment_frames its frame ids; blocks holds n x 5
 * values: address, size, requested_size, state (GMT_FWBLOCK_*), nframes,
 * and frames every block's frame ids, block by block. */
GMT_EXPORT void gpumemtrace_fw_segment_v1(uint64_t seq, int64_t device, const uint64_t *segment,
					  const uint64_t *segment_frames, size_t n,
					  const uint64_t *blocks, const uint64_t *frames)
{
	int saved_errno = errno;
	if (!blocks)
		n = 0;
	size_t i = 0, f = 0, seg_nf = segment ? kept(segment[6]) : 0;
	uint64_t more = 0;
	while (segment && (i < n || !more)) {
		size_t body = sizeof(struct gmt_raw_fwseg) + seg_nf * sizeof(uint64_t), k = i,
		       fk = f;
		for (; k < n; k++) {
			const uint64_t *v = &blocks[k * BLOCK_WORDS];
			size_t add = sizeof(struct gmt_raw_fwblock) + kept(v[4]) * sizeof(uint64_t);
			if (k > i && body + add > FW_RING_BYTES)
				break;
			body += add;
			fk += (size_t)v[4];
		}
		size_t len;
		struct gmt_raw_fwseg *r = gmt_record_begin(GMT_RING_FWSEG, body, &len);
		if (r) {
			uint64_t *ips = (void *)(r + 1);
			uint16_t snf = put_frames(ips, segment_frames, segment[6]);
			*r = (struct gmt_raw_fwseg){seq,
						    segment[0],
						    segment[1],
						    segment[2],
						    segment[3] | more,
						    segment[4],
						    segment[5],
						    device,
						    (uint32_t)(k - i),
						    snf,
						    0};
			struct gmt_raw_fwblock *b = (void *)(ips + snf);
			ips = (void *)(b + (k - i));
			size_t at = f;
			for (size_t j = i; j < k; j++, b++) {
				const uint64_t *v = &blocks[j * BLOCK_WORDS];
				uint16_t nf = put_frames(ips, frames ? frames + at : NULL, v[4]);
				*b = (struct gmt_raw_fwblock){v[0],	      v[1], v[2],
							      (uint32_t)v[3], nf,   0};
				ips += nf;
				at += (size_t)v[4];
			}
			gmt_record_end(len);
		}
		i = k;
		f = fk;
		more = GMT_FWSEG_CONTINUED;
	}
	errno = saved_errno;
}
