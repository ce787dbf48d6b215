/* The queue of NOTE records (gmt_note, preload/tracer.h), read by the
 * flush thread. Core-internal (preload/notes.c): it calls nothing of ours,
 * so anything may note. */
#ifndef GMT_PRELOAD_NOTES_H
#define GMT_PRELOAD_NOTES_H

/* Hands each note not handed yet to fn, in order, then one for the notes
 * that did not fit ("N more notes were dropped"). Under the notes' lock:
 * fn must not note. */
void gmt_notes_each_new(void (*fn)(void *arg, int level, const char *text), void *arg);

/* fork: the prepare side takes the lock, both sides release it; the child
 * hands every note again (its trace repeats what its parent learnt). */
void gmt_notes_fork_prepare(void);
void gmt_notes_fork_parent(void);
void gmt_notes_fork_child(void);

#endif
