/* The queue of NOTE records (preload/notes.h). Notes come from lookups and
 * start-up, rarely and never per event: one lock is enough. */
#include <pthread.h>
#include <stdint.h>

#include "common/log.h"
#include "preload/notes.h"
#include "preload/tracer.h"

static struct {
	pthread_mutex_t lock;
	struct {
		int level;
		char text[240];
	} v[GMT_MAX_NOTES];
	int n, handed;
	uint64_t dropped;
} gmt_notes = {.lock = PTHREAD_MUTEX_INITIALIZER};

void gmt_note(int level, const char *text)
{
	pthread_mutex_lock(&gmt_notes.lock);
	if (gmt_notes.n < GMT_MAX_NOTES) {
		gmt_notes.v[gmt_notes.n].level = level;
		gmt_format(gmt_notes.v[gmt_notes.n].text, sizeof gmt_notes.v[0].text, "%s", text);
		gmt_notes.n++;
	} else {
		gmt_notes.dropped++;
	}
	pthread_mutex_unlock(&gmt_notes.lock);
}

/* fn is called without the lock: it may write the trace, and a write that
 * does not return must not hold up fork, which takes the lock (life.c). */
void gmt_notes_each_new(void (*fn)(void *arg, int level, const char *text), void *arg)
{
	static __typeof__(gmt_notes.v) copy; /* one caller: the writer, under flush_lock */
	pthread_mutex_lock(&gmt_notes.lock);
	int from = gmt_notes.handed, to = gmt_notes.n;
	for (int i = from; i < to; i++)
		copy[i] = gmt_notes.v[i];
	gmt_notes.handed = to;
	uint64_t dropped = gmt_notes.dropped;
	gmt_notes.dropped = 0;
	pthread_mutex_unlock(&gmt_notes.lock);
	for (int i = from; i < to; i++)
		fn(arg, copy[i].level, copy[i].text);
	if (dropped) {
		char text[96];
		gmt_format(text, sizeof text, "%llu more notes were dropped",
			   (unsigned long long)dropped);
		fn(arg, 1, text);
	}
}

void gmt_notes_fork_prepare(void)
{
	pthread_mutex_lock(&gmt_notes.lock);
}

void gmt_notes_fork_parent(void)
{
	pthread_mutex_unlock(&gmt_notes.lock);
}

void gmt_notes_fork_child(void)
{
	gmt_notes.handed = 0;
	pthread_mutex_unlock(&gmt_notes.lock);
}
