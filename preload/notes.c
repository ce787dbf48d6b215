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

void gmt_notes_each_new(void (*fn)(void *arg, int level, const char *text), void *arg)
{
	pthread_mutex_lock(&gmt_notes.lock);
	for (; gmt_notes.handed < gmt_notes.n; gmt_notes.handed++)
		fn(arg, gmt_notes.v[gmt_notes.handed].level, gmt_notes.v[gmt_notes.handed].text);
	if (gmt_notes.dropped) {
		char text[96];
		gmt_format(text, sizeof text, "%llu more notes were dropped",
			   (unsigned long long)gmt_notes.dropped);
		fn(arg, 1, text);
		gmt_notes.dropped = 0;
	}
	pthread_mutex_unlock(&gmt_notes.lock);
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
