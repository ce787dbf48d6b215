/* What the tracer asks the driver itself: the calling thread's device and
 * each device's facts. Through GMT_USED (preload/real.h): never creates a
 * context, never calls cuInit. */
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
int gmt_driver_device_count(void); /* -1: CUDA not initialized by the program yet */
/* 0: every fact read; 1: a query failed (why names the first); -1: no such device. */
int gmt_driver_device_info(int ordinal, struct gmt_device_info *out, char *why, size_t why_len);

#endif
