/* The scanning thread (gmt-scan, preload/scanner.c): the work that may wait
 * on the loader's lock or take long, done where nobody waits for it. It
 * scans for loaded modules when the flush thread asks (each flush cycle),
 * and with GPUMEMTRACE_SYMBOLIZE=1 it names new frames in the process. The
 * flush thread and the exit only ever take what it has finished. */
#ifndef GMT_PRELOAD_SCANNER_H
#define GMT_PRELOAD_SCANNER_H

#include <stdint.h>

#include "preload/stacks.h"

struct gmt_writer;

/* Starts the thread, once per process image (the trace file exists). */
void gmt_scanner_start(int symbolize);
/* Asks for a module scan: an atomic and a futex wake, never a wait. */
void gmt_scanner_poke(void);
/* Asks for a scan (the process is ending: libraries loaded just before the
 * end), and returns the ask's ticket (0: no thread). Async-signal-safe. */
uint32_t gmt_scanner_scan_ask(void);
/* Waits for a scan that began after the ask to end: at most loader_ms
 * while the thread waits for the loader's lock (which the thread waiting
 * for us may hold) or names a frame, at most max_ms otherwise (slow, or
 * waiting for a CPU). Returns 0, or -1 when it did not end in time. */
int gmt_scanner_scan_wait(uint32_t ask, unsigned loader_ms, unsigned max_ms);

/* Flush thread: hands the frames of stack nodes new since *asked to the
 * naming (SYMBOLIZE=1; a no-op otherwise), as many as fit. */
void gmt_scanner_ask_names(const struct gmt_stacks *s, uint32_t *asked);
/* Flush thread: moves the SYMBOL records named so far into the writer's
 * chunk. Never waits. */
void gmt_scanner_take_names(struct gmt_writer *w);
/* How many frames were handed to the naming and not named yet. */
uint64_t gmt_scanner_names_pending(void);

/* fork: the prepare side waits (bounded) until the thread runs our code;
 * the child has no scanner until its own trace starts. */
void gmt_scanner_fork_prepare(void);
void gmt_scanner_fork_child(void);

#endif
