/* The library's entry points for programs and the Python helper (the marker
 * API, framework counters, OOMs and history): one prototype each, so that
 * the definitions (preload/marker.c, preload/fwhist.c) are checked against
 * them. include/gpumemtrace/gpumemtrace.h finds them with dlsym and
 * preload/hooks/exports.map.in exports them. */
#ifndef GMT_PRELOAD_EXPORTS_H
#define GMT_PRELOAD_EXPORTS_H

#include <stddef.h>
#include <stdint.h>

void gpumemtrace_mark_v1(const char *text);
void gpumemtrace_range_push_v1(const char *text);
void gpumemtrace_range_pop_v1(void);
int gpumemtrace_flush_v1(unsigned max_ms);
long gpumemtrace_trace_path_v1(char *buf, size_t size);
void gpumemtrace_counters_v1(unsigned reason, const char *source, const char *device,
			     int64_t ordinal, size_t n, const char *const *names,
			     const uint64_t *values);
void gpumemtrace_framework_oom_v1(unsigned how, const char *source, const char *type,
				  int64_t ordinal, size_t n, const char *const *names,
				  const uint64_t *values, const char *message);
void gpumemtrace_fw_frames_v1(size_t n, const char *const *functions, const char *const *files,
			      const uint64_t *lines, uint64_t *ids);
void gpumemtrace_fw_snapshot_v1(uint64_t seq, unsigned reason, const char *source, uint64_t flags,
				uint64_t max_entries, size_t n, const char *const *keys,
				const char *const *values);
void gpumemtrace_fw_entries_v1(uint64_t seq, int64_t device, uint64_t flags, size_t n,
			       const uint64_t *entries, const uint64_t *frames);
void gpumemtrace_fw_segment_v1(uint64_t seq, int64_t device, const uint64_t *segment,
			       const uint64_t *segment_frames, size_t n, const uint64_t *blocks,
			       const uint64_t *frames);

#endif
