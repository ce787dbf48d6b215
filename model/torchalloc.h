/* PyTorch's CUDA caching allocator (CUDACachingAllocator, the "native"
 * backend) as a pure model: no CUDA call, no I/O. What it would ask of the
 * driver goes through a backend of callbacks: the emulator (tests/emu)
 * passes the simulated CUDA, replay and whatif (analysis/) an address
 * space of their own. What PyTorch's history would record goes to the
 * backend's trace callback, entry for entry.
 *
 * The rules, with their sources in /work/shared/notes/frameworks.md
 * section 1 and pytorch c10/cuda/CUDACachingAllocator.cpp (malloc,
 * round_size, get_pool, get_allocation_size, get_free_block,
 * should_split, alloc_block, alloc_found_block, free_block,
 * try_merge_blocks, release_available_cached_blocks,
 * release_cached_blocks, garbage_collect_cached_blocks,
 * find_expandable_block, map_block, unmap_block):
 *   - sizes round up to 512 B, or to a power-of-two division
 *     (roundup_power2_divisions); <= 1 MiB is the small pool;
 *   - a new segment is 2 MiB (small), 20 MiB (1-10 MiB requests) or the
 *     size rounded up to 2 MiB; expandable segments map 2 MiB (small) or
 *     20 MiB (large) pages into one reservation per stream and pool;
 *   - best fit per stream and pool, free blocks ordered by (stream, size,
 *     segment age, address); blocks at or above max_split_size serve only
 *     requests within max_non_split_rounding of their size and are never
 *     split;
 *   - a block is split when what remains is >= 512 B (small pool,
 *     expandable) or > 1 MiB and the request is below max_split_size;
 *     freed blocks merge with free neighbours;
 *   - when no block fits: garbage collection (a memory fraction and
 *     garbage_collection_threshold set), a new segment, else the OOM path
 *     (free oversize cached blocks if max_split_size is set, then every
 *     unsplit cached segment, then one retry).
 *
 * One model per device. Not thread-safe: the caller serializes, as
 * PyTorch's allocator lock does. */
#ifndef GMT_MODEL_TORCHALLOC_H
#define GMT_MODEL_TORCHALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The allocator's constants (frameworks.md section 1.1). */
#define TA_MIN_BLOCK	   512ull
#define TA_SMALL_SIZE	   (1ull << 20)
#define TA_SMALL_BUFFER	   (2ull << 20)
#define TA_MIN_LARGE_ALLOC (10ull << 20)
#define TA_LARGE_BUFFER	   (20ull << 20)
#define TA_ROUND_LARGE	   (2ull << 20)
#define TA_NO_MAX_SPLIT	   UINT64_MAX
#define TA_ROUNDUP_ENTRIES 16 /* roundup_power2_divisions: 1 MiB, 2 MiB ... 32 GiB and up */

/* How free blocks of one size are ordered: PyTorch since the segment
 * registration counter (2025) by segment age, then address; before it by
 * address alone. */
enum ta_order { TA_ORDER_AGE = 0, TA_ORDER_ADDRESS = 1 };

/* PYTORCH_CUDA_ALLOC_CONF and the memory fraction, as the model takes them. */
struct ta_config {
	uint64_t max_split_size;	      /* bytes; TA_NO_MAX_SPLIT: unset */
	uint64_t max_non_split_rounding;      /* bytes; default TA_LARGE_BUFFER */
	uint32_t roundup[TA_ROUNDUP_ENTRIES]; /* divisions per interval; 0/1: none */
	bool expandable_segments;
	double gc_threshold;	     /* garbage_collection_threshold; 0: off */
	uint64_t allowed_max;	     /* the memory fraction's bytes; 0: none */
	uint64_t large_segment_size; /* default TA_LARGE_BUFFER */
	uint64_t device_total;	     /* for the expandable reservation; 0: 80 GiB */
	enum ta_order order;
};

/* The defaults: PyTorch with PYTORCH_CUDA_ALLOC_CONF unset. */
void ta_config_default(struct ta_config *c);
/* Applies "key:value,key:value" (PYTORCH_CUDA_ALLOC_CONF's syntax) to c:
 * max_split_size_mb, roundup_power2_divisions (N or [64:8,256:4,>:1]),
 * expandable_segments, garbage_collection_threshold, large_segment_size_mb,
 * max_non_split_rounding_mb; backend and the rest are passed over.
 * 0, or -1 with a one-line reason in err. */
int ta_config_parse(struct ta_config *c, const char *conf, char *err, size_t errsize);
/* The first key of conf that no PyTorch version's caching allocator
 * knows (it refuses such a key at start-up), into key; false if none. */
bool ta_config_unknown_key(const char *conf, char *key, size_t keysize);
/* The conf string that gives c (for messages), into buf. */
const char *ta_config_text(const struct ta_config *c, char *buf, size_t size);

/* What PyTorch's history records (its TraceEntry actions). */
enum ta_action {
	TA_ALLOC = 1,
	TA_FREE_REQUESTED,
	TA_FREE_COMPLETED,
	TA_SEGMENT_ALLOC,
	TA_SEGMENT_FREE,
	TA_SEGMENT_MAP,
	TA_SEGMENT_UNMAP,
	TA_OOM, /* addr: the device's free bytes; size: the rounded request */
};

/* The driver, as the model asks for it. Every callback may be NULL where
 * the caller never needs it (no expandable segments, no trace). */
struct ta_backend {
	void *ctx;
	/* cudaMalloc: 0 with *ptr, or -1 (out of memory) */
	int (*malloc)(void *ctx, uint64_t size, uint64_t *ptr);
	void (*free)(void *ctx, uint64_t ptr, uint64_t size);
	/* expandable: reserve VA; create and map [va, va + n * page), one
	 * handle a page (0, or -1 when out of memory: nothing is left mapped);
	 * unmap and release; give the VA back */
	int (*reserve)(void *ctx, uint64_t size, uint64_t *va);
	int (*map)(void *ctx, uint64_t va, uint64_t page, uint64_t n);
	void (*unmap)(void *ctx, uint64_t va, uint64_t page, uint64_t n);
	void (*release)(void *ctx, uint64_t va, uint64_t size);
	/* cudaMemGetInfo's free bytes, for an OOM entry */
	uint64_t (*device_free)(void *ctx);
	/* a history entry, as PyTorch's record_trace makes it */
	void (*trace)(void *ctx, enum ta_action action, uint64_t addr, uint64_t size,
		      uint64_t stream);
};

/* Counters, as torch.cuda.memory_stats() names them. */
struct ta_stats {
	uint64_t reserved, max_reserved;   /* reserved_bytes.all.current/peak */
	uint64_t allocated, max_allocated; /* allocated_bytes.all.current/peak */
	uint64_t requested;		   /* requested_bytes.all.current */
	uint64_t segments, max_segments;
	uint64_t inactive_split; /* inactive_split_bytes.all.current */
	uint64_t num_alloc_retries, num_ooms, num_device_alloc, num_device_free;
	/* expandable segments' contiguous mapped ranges (not in memory_stats:
	 * what a snapshot lists as their segments) */
	uint64_t mapped_ranges;
};

struct ta;
struct ta *ta_new(const struct ta_config *c, const struct ta_backend *b);
void ta_free_model(struct ta *a);

/* torch's malloc: 0 with *ptr, or -1 after the OOM path gave up (an OOM
 * entry was traced). On out of memory of the model itself, -2. */
int ta_malloc(struct ta *a, uint64_t size, uint64_t stream, uint64_t *ptr);
/* The free of a tensor: free_requested, then free_completed unless
 * pending (its block was used on other streams: recordStream). Returns 0,
 * or -1 when ptr is no allocated block. */
int ta_free(struct ta *a, uint64_t ptr);
int ta_free_requested(struct ta *a, uint64_t ptr, bool pending);
int ta_free_completed(struct ta *a, uint64_t ptr);
/* torch.cuda.empty_cache(): every unsplit cached segment back to the
 * driver, expandable segments' free pages unmapped. */
void ta_empty_cache(struct ta *a);
/* torch.cuda.set_per_process_memory_fraction, as bytes (0: none). */
void ta_set_allowed(struct ta *a, uint64_t bytes);

const struct ta_stats *ta_stats(const struct ta *a);
const struct ta_config *ta_config(const struct ta *a);

/* ---- for replay: following a recorded history ---- */

/* The block the allocator would choose for a request, without taking it:
 * a cached block (*ptr its address, *new_segment false), or a new
 * segment/mapping of *seg_size bytes (*new_segment true). Changes nothing
 * (garbage collection and the OOM path are not run). */
void ta_choose(struct ta *a, uint64_t size, uint64_t stream, uint64_t *ptr, bool *new_segment,
	       uint64_t *seg_size);
/* Takes what the history says the allocator took: the free block at ptr
 * (split as the rules say), for a request of size on stream. 0, or -1
 * when there is no free block at ptr. */
int ta_take(struct ta *a, uint64_t ptr, uint64_t size, uint64_t stream);
/* A segment the history made (segment_alloc), or had before it began: a
 * free block of size at ptr in the small or large pool. */
int ta_add_segment(struct ta *a, uint64_t ptr, uint64_t size, uint64_t stream, bool small);
/* Pages the history mapped into an expandable segment (segment_map) at
 * [ptr, ptr + size) on stream, in the small or large pool: the segment is
 * made (its reservation starting at ptr) when this is its first mapping. */
int ta_map(struct ta *a, uint64_t ptr, uint64_t size, uint64_t stream, bool small);
/* A segment the history gave back (segment_free): 0, or -1 when ptr is no
 * whole free segment in the model. */
int ta_release_segment(struct ta *a, uint64_t ptr);
/* Pages the history unmapped (segment_unmap): 0, or -1. */
int ta_unmap(struct ta *a, uint64_t ptr, uint64_t size);
/* An allocated block the history had before it began: carved out of the
 * free space of the segment that holds [ptr, ptr + size). 0, or -1. */
int ta_assume_live(struct ta *a, uint64_t ptr, uint64_t size, uint64_t requested);

/* ---- the state, for fragmentation and snapshots ---- */

struct ta_block_info {
	uint64_t ptr, size, requested, stream;
	bool allocated, pending, mapped, small, expandable;
	bool segment_start; /* the first block of its segment */
};
/* Calls fn for every block, segment by segment in address order. */
void ta_walk(const struct ta *a, void (*fn)(void *ctx, const struct ta_block_info *b), void *ctx);
/* The largest free block (of any stream and pool); 0 when none. */
uint64_t ta_largest_free(const struct ta *a);

/* The rounding rules alone (round_size, get_allocation_size). */
uint64_t ta_round_size(const struct ta_config *c, uint64_t size);
uint64_t ta_allocation_size(const struct ta_config *c, uint64_t size);

#endif
