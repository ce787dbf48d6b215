/* gpumemtrace's marker API: name the phases of a program in its trace.
 *
 *     #include <gpumemtrace/gpumemtrace.h>
 *     gpumemtrace_range_push("epoch 3");
 *     ...
 *     gpumemtrace_range_pop();
 *     gpumemtrace_mark("checkpoint saved");
 *
 * Header-only: nothing to link but libdl (glibc before 2.34). Each call
 * finds libgpumemtrace.so's entry point once with dlsym(RTLD_DEFAULT) and
 * is a no-op when the library is not loaded, so the same binary runs
 * traced or not. Thread-safe; texts are copied (cut at 1024 bytes), NULL
 * is an empty text. Ranges nest per thread. */
#ifndef GPUMEMTRACE_GPUMEMTRACE_H
#define GPUMEMTRACE_GPUMEMTRACE_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef RTLD_DEFAULT
#define GPUMEMTRACE_DEFAULT_SCOPE_ RTLD_DEFAULT
#else
#define GPUMEMTRACE_DEFAULT_SCOPE_ ((void *)0) /* glibc's RTLD_DEFAULT without _GNU_SOURCE */
#endif

/* The entry point `name`, looked up once per slot; NULL when absent. A
 * race makes two threads look it up twice, with the same answer. */
static inline void *gpumemtrace_entry_(void **slot, const char *name)
{
	static char absent_;
	/* Pairs with the release store below: the address is all we publish. */
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!p) {
		p = dlsym(GPUMEMTRACE_DEFAULT_SCOPE_, name);
		if (!p)
			p = &absent_;
		/* Pairs with the acquire load above. */
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p == (void *)&absent_ ? (void *)0 : p;
}

static inline void gpumemtrace_call_text_(void **slot, const char *name, const char *text)
{
	union {
		void *object;
		void (*function)(const char *);
	} entry;
	entry.object = gpumemtrace_entry_(slot, name);
	if (entry.object)
		entry.function(text);
}

/* An instant in the trace. */
static inline void gpumemtrace_mark(const char *text)
{
	static void *slot_;
	gpumemtrace_call_text_(&slot_, "gpumemtrace_mark_v1", text);
}

/* Opens a range on the calling thread; gpumemtrace_range_pop closes it. */
static inline void gpumemtrace_range_push(const char *text)
{
	static void *slot_;
	gpumemtrace_call_text_(&slot_, "gpumemtrace_range_push_v1", text);
}

static inline void gpumemtrace_range_pop(void)
{
	static void *slot_;
	union {
		void *object;
		void (*function)(void);
	} entry;
	entry.object = gpumemtrace_entry_(&slot_, "gpumemtrace_range_pop_v1");
	if (entry.object)
		entry.function();
}

/* A framework's own memory counters (a COUNTERS record): n names and
 * values as the framework names them, read on `device` ("cuda:0", CUDA
 * ordinal `ordinal`, -1 unknown) by `source` ("torch"); `reason` 0
 * periodic, 1 at an OOM, 2 first, 3 at exit. At most 64 counters, texts
 * cut at 128 bytes. `gpumemtrace run --framework-counters` writes these
 * for PyTorch, JAX and TF from Python. */
static inline void gpumemtrace_counters(unsigned reason, const char *source, const char *device,
					int64_t ordinal, size_t n, const char *const *names,
					const uint64_t *values)
{
	static void *slot_;
	union {
		void *object;
		void (*function)(unsigned, const char *, const char *, int64_t, size_t,
				 const char *const *, const uint64_t *);
	} entry;
	entry.object = gpumemtrace_entry_(&slot_, "gpumemtrace_counters_v1");
	if (entry.object)
		entry.function(reason, source, device, ordinal, n, names, values);
}

/* A framework allocator's own view (FWSNAP, FWTRACE, FWSEG records;
 * docs/trace-format.md): what `gpumemtrace run --framework-history` writes
 * for PyTorch from Python. Frames are named once (ids[i] for functions[i],
 * files[i], lines[i]); a snapshot `seq` is its FWSNAP (settings as text),
 * then its entries (n x 6 values: action, addr, size, stream, time_us,
 * nframes; frames: each entry's frame ids, innermost first), then each
 * segment (7 values: address, total_size, stream, flags, pool_a, pool_b,
 * nframes; n x 5 block values: address, size, requested_size, state,
 * nframes). All from one thread, in that order. */
typedef void (*gpumemtrace_fw_frames_fn_)(size_t, const char *const *, const char *const *,
					  const uint64_t *, uint64_t *);
typedef void (*gpumemtrace_fw_snapshot_fn_)(uint64_t, unsigned, const char *, uint64_t, uint64_t,
					    size_t, const char *const *, const char *const *);
typedef void (*gpumemtrace_fw_entries_fn_)(uint64_t, int64_t, uint64_t, size_t, const uint64_t *,
					   const uint64_t *);
typedef void (*gpumemtrace_fw_segment_fn_)(uint64_t, int64_t, const uint64_t *, const uint64_t *,
					   size_t, const uint64_t *, const uint64_t *);

static inline void gpumemtrace_fw_frames(size_t n, const char *const *functions,
					 const char *const *files, const uint64_t *lines,
					 uint64_t *ids)
{
	static void *slot_;
	union {
		void *object;
		gpumemtrace_fw_frames_fn_ function;
	} entry;
	entry.object = gpumemtrace_entry_(&slot_, "gpumemtrace_fw_frames_v1");
	if (entry.object)
		entry.function(n, functions, files, lines, ids);
	else
		for (size_t i = 0; i < n; i++)
			ids[i] = 0; /* untraced: no names */
}

static inline void gpumemtrace_fw_snapshot(uint64_t seq, unsigned reason, const char *source,
					   uint64_t flags, uint64_t max_entries, size_t n,
					   const char *const *keys, const char *const *values)
{
	static void *slot_;
	union {
		void *object;
		gpumemtrace_fw_snapshot_fn_ function;
	} entry;
	entry.object = gpumemtrace_entry_(&slot_, "gpumemtrace_fw_snapshot_v1");
	if (entry.object)
		entry.function(seq, reason, source, flags, max_entries, n, keys, values);
}

static inline void gpumemtrace_fw_entries(uint64_t seq, int64_t device, uint64_t flags, size_t n,
					  const uint64_t *entries, const uint64_t *frames)
{
	static void *slot_;
	union {
		void *object;
		gpumemtrace_fw_entries_fn_ function;
	} entry;
	entry.object = gpumemtrace_entry_(&slot_, "gpumemtrace_fw_entries_v1");
	if (entry.object)
		entry.function(seq, device, flags, n, entries, frames);
}

static inline void gpumemtrace_fw_segment(uint64_t seq, int64_t device, const uint64_t *segment,
					  const uint64_t *segment_frames, size_t n,
					  const uint64_t *blocks, const uint64_t *frames)
{
	static void *slot_;
	union {
		void *object;
		gpumemtrace_fw_segment_fn_ function;
	} entry;
	entry.object = gpumemtrace_entry_(&slot_, "gpumemtrace_fw_segment_v1");
	if (entry.object)
		entry.function(seq, device, segment, segment_frames, n, blocks, frames);
}

#ifdef __cplusplus
}
#endif

#endif
