/* The rules on events that the readers (analysis/, cli/) and the preload
 * library's peak watch share, so that what the library watches is what the
 * reports count. Inline, no calls, no allocation: the flush thread runs
 * them for every event. */
#ifndef GMT_COMMON_EVENTS_H
#define GMT_COMMON_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "gpumemtrace/format.h"

/* cuMemCreate's aux: CU_MEM_LOCATION_TYPE_DEVICE. */
#define GMT_LOCATION_DEVICE 1

/* A failed call changes nothing. result: the call's return code; flags:
 * GMT_EV_* bits (the ring's raw events leave GMT_EV_FAILED to result). */
static inline bool gmt_failed(uint64_t result, uint32_t flags)
{
	return result != 0 || (flags & GMT_EV_FAILED);
}

/* An out-of-memory failure: CUDA_ERROR_OUT_OF_MEMORY and
 * cudaErrorMemoryAllocation are both 2, so one test serves the driver's
 * and the runtime's calls. */
static inline bool gmt_out_of_memory(uint64_t result)
{
	return result == 2;
}

/* Whether an allocation of this GMT_KIND_* is device memory (the device
 * bytes that summary's peak counts); aux: the event's, for cuMemCreate its
 * location type: host-located handles are not. */
static inline bool gmt_device_memory(int kind, uint64_t aux)
{
	return kind == GMT_KIND_DEVICE || kind == GMT_KIND_ASYNC ||
	       (kind == GMT_KIND_VMM_PHYS && aux == GMT_LOCATION_DEVICE);
}

/* A cuMemCreate handle holds its memory while it has a reference (the
 * creation, retains, less releases) or a mapping: cuMemRelease of a mapped
 * handle frees nothing until its last cuMemUnmap. */
static inline bool gmt_handle_held(uint64_t refs, uint64_t maps)
{
	return refs != 0 || maps != 0;
}

/* The memory spaces (enum gmt_space) are 0 .. GMT_SPACES - 1. */
#define GMT_SPACES (GMT_SPACE_VA + 1)

static inline bool gmt_space_valid(int space)
{
	return space >= 0 && space < GMT_SPACES;
}

/* Every memory space in order: GMT_EACH_SPACE(sp) { ... sp ... } */
#define GMT_EACH_SPACE(sp) for (int sp = 0; sp < GMT_SPACES; sp++)

#endif
