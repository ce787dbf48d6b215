/* What the tracer asks the driver itself: the calling thread's device and
 * each device's facts (preload/device.c). Through GMT_USED
 * (preload/real.h): never creates a context, never calls cuInit. What a
 * failed call or a context call adds: preload/probes.c (tracer.h). */
#ifndef GMT_DEVICE_H
#define GMT_DEVICE_H

#include <stddef.h>
#include <stdint.h>

/* The device ordinal of the calling thread's current context, -1 if none. */
int32_t gmt_current_device(void);

/* Device facts, asked from the flush thread. */
struct gmt_device_info {
	char name[256];
	uint8_t uuid[16];
	uint64_t total_bytes;
	int cc_major, cc_minor, driver_version;
};
/* 1 when every fact of d is known. */
int gmt_device_info_complete(const struct gmt_device_info *d);

/* DEVICE records kept for the first this many ordinals. */
#define GMT_MAX_FACTS_DEVICES 16

/* What the driver's queries gave for each device, merged over several
 * askings: a query that failed once may answer later, and what one asking
 * learnt stays true. */
struct gmt_device_facts {
	int n; /* devices asked about */
	uint8_t seen[GMT_MAX_FACTS_DEVICES];
	struct gmt_device_info d[GMT_MAX_FACTS_DEVICES];
	char why[GMT_MAX_FACTS_DEVICES][160]; /* each one's first failed query */
};
/* Asks the driver about every device not in skip (may be NULL); returns
 * how many it has (-1: CUDA not initialized yet). */
int gmt_device_facts_query(struct gmt_device_facts *f, const uint8_t *skip);
void gmt_device_facts_merge(struct gmt_device_facts *into, const struct gmt_device_facts *from);
/* Zeroed facts, or NULL. mmap, not malloc: made on a program's thread,
 * freed on the flush thread, where a free of another thread's memory
 * takes that thread's arena lock, which at exit the interrupted thread may
 * hold (t-life-sigterm-exit). */
struct gmt_device_facts *gmt_device_facts_new(void);
void gmt_device_facts_free(struct gmt_device_facts *f);

#endif
