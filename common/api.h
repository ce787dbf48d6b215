/* What each traced API is (operation, kind, memory space) and its result
 * codes' names, from the one list in gpumemtrace/format.h. */
#ifndef GMT_COMMON_API_H
#define GMT_COMMON_API_H

#include <stdbool.h>
#include <stdint.h>

#include "gpumemtrace/format.h"

struct api_info {
	const char *name;
	int op, kind, space;
	enum gmt_aux aux; /* what aux and aux2 hold */
};
extern const struct api_info api_table_[GMT_API_MAX_ + 1]; /* use api_lookup */
/* Inline: the replay asks up to three times an event. NULL for ids not in it. */
static inline const struct api_info *api_lookup(uint32_t api)
{
	if (api > GMT_API_MAX_ || !api_table_[api].name)
		return 0;
	return &api_table_[api];
}
/* The name, or "api#N" in a static buffer for unknown ids. */
const char *api_name(uint32_t api);

/* The names of an aux kind's two fields ("pitch", "width"; "aux", "aux2"
 * for GMT_AUX_NONE), and whether each reads best in hex (an address, a
 * handle, flags). */
struct aux_names {
	const char *name[2];
	bool hex[2];
};
const struct aux_names *aux_names(enum gmt_aux aux);

/* "CUDA_ERROR_OUT_OF_MEMORY" for driver APIs, "cudaErrorMemoryAllocation"
 * for runtime ones; NULL when unknown. */
const char *result_name(uint32_t api, uint64_t result);

#endif
