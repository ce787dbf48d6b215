/* Memory for the flush thread's own tables (the stack tree, its hash
 * tables, the compression buffers), from mmap, never from malloc: at exit
 * the flush thread must not wait for an allocator lock that a thread a
 * signal interrupted inside malloc holds for good (t-life-exit-malloc).
 * Zeroed. One user at a time: callers hold flush_lock (or are the only
 * thread, after a fork). */
#ifndef GMT_MEM_H
#define GMT_MEM_H

#include <stddef.h>

void *gmt_mem_alloc(size_t n);
/* n: the size it was asked for with (a class is found from it). */
void gmt_mem_free(void *p, size_t n);
/* p's first min(old, n) bytes moved into a block of n (the rest zeroed);
 * NULL when memory runs out, p then untouched. */
void *gmt_mem_grow(void *p, size_t old, size_t n);

/* Append-only memory, never freed, for one owner at a time (the module
 * list, under its scan lock): zeroed, 16-byte aligned, from 64 KiB maps.
 * Taken inside dl_iterate_phdr, where a malloc waiting for a lock held
 * for good would hold the loader's lock too, and with it every dlopen,
 * dlclose and the exit's own destructors (t-life-exit-malloc). */
struct gmt_arena {
	unsigned char *next;
	size_t left;
};
void *gmt_arena_alloc(struct gmt_arena *a, size_t n);
char *gmt_arena_strdup(struct gmt_arena *a, const char *s);

#endif
