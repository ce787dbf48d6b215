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

#ifdef __cplusplus
}
#endif

#endif
