/* The API and result names, from the one list in format.h. */
#include <stdio.h>
#include <string.h>

#include "common/api.h"

/* Ids only grow down GMT_API_LIST, so none repeats and GMT_API_MAX_, the
 * last, is the largest: expands to (0 < 1) && (1 < 2) && ... && (63 < 64). */
#define GMT_API_ASCENDING_(id, name, op, kind, space, aux) id) && (id <
_Static_assert((0 < GMT_API_LIST(GMT_API_ASCENDING_) GMT_API_MAX_ + 1),
	       "GMT_API_LIST's ids must only grow: append new APIs with the next id");
#undef GMT_API_ASCENDING_

const struct api_info api_table_[GMT_API_MAX_ + 1] = {
#define X_(id, name, op, kind, space, aux) [id] = {#name, op, kind, space, aux},
    GMT_API_LIST(X_)
#undef X_
};

const struct aux_names *aux_names(enum gmt_aux aux)
{
	static const struct aux_names names[] = {
	    [GMT_AUX_NONE] = {{"aux", "aux2"}, {false, false}},
	    [GMT_AUX_PITCH] = {{"pitch", "width"}, {false, false}},
	    [GMT_AUX_STREAM] = {{"stream", "pool"}, {true, true}},
	    [GMT_AUX_FLAGS] = {{"flags", "aux2"}, {true, false}},
	    [GMT_AUX_LOCATION] = {{"location", "aux2"}, {false, false}},
	    [GMT_AUX_MAP] = {{"handle", "offset"}, {true, false}},
	    [GMT_AUX_RESERVE] = {{"alignment", "addr"}, {false, true}},
	    [GMT_AUX_ADDRESS] = {{"address", "aux2"}, {true, false}},
	    [GMT_AUX_HANDLE_TYPE] = {{"handle_type", "aux2"}, {false, false}},
	    /* dump has always printed NVML's readings as aux, aux2 */
	    [GMT_AUX_NVML] = {{"aux", "aux2"}, {false, false}},
	};
	return (unsigned)aux < sizeof(names) / sizeof(names[0]) ? &names[aux]
								: &names[GMT_AUX_NONE];
}

const char *api_name(uint32_t api)
{
	static char buf[32];
	const struct api_info *a = api_lookup(api);
	if (a)
		return a->name;
	snprintf(buf, sizeof(buf), "api#%u", api);
	return buf;
}

struct code_name {
	unsigned code;
	const char *name;
};

static const struct code_name driver_codes[] = {
    {0, "CUDA_SUCCESS"},
    {1, "CUDA_ERROR_INVALID_VALUE"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "CUDA_ERROR_DEINITIALIZED"},
    {34, "CUDA_ERROR_STUB_LIBRARY"},
    {100, "CUDA_ERROR_NO_DEVICE"},
    {101, "CUDA_ERROR_INVALID_DEVICE"},
    {201, "CUDA_ERROR_INVALID_CONTEXT"},
    {208, "CUDA_ERROR_ALREADY_MAPPED"},
    {211, "CUDA_ERROR_NOT_MAPPED"},
    {400, "CUDA_ERROR_INVALID_HANDLE"},
    {401, "CUDA_ERROR_ILLEGAL_STATE"},
    {500, "CUDA_ERROR_NOT_FOUND"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {800, "CUDA_ERROR_NOT_PERMITTED"},
    {801, "CUDA_ERROR_NOT_SUPPORTED"},
    {999, "CUDA_ERROR_UNKNOWN"},
};

static const struct code_name runtime_codes[] = {
    {0, "cudaSuccess"},
    {1, "cudaErrorInvalidValue"},
    {2, "cudaErrorMemoryAllocation"},
    {3, "cudaErrorInitializationError"},
    {4, "cudaErrorCudartUnloading"},
    {12, "cudaErrorInvalidPitchValue"},
    {17, "cudaErrorInvalidDevicePointer"},
    {34, "cudaErrorStubLibrary"},
    {35, "cudaErrorInsufficientDriver"},
    {100, "cudaErrorNoDevice"},
    {101, "cudaErrorInvalidDevice"},
    {400, "cudaErrorInvalidResourceHandle"},
    {500, "cudaErrorSymbolNotFound"},
    {700, "cudaErrorIllegalAddress"},
    {800, "cudaErrorNotPermitted"},
    {801, "cudaErrorNotSupported"},
    {999, "cudaErrorUnknown"},
};

const char *result_name(uint32_t api, uint64_t result)
{
	const char *name = api_name(api);
	int runtime = strncmp(name, "cuda", 4) == 0;
	const struct code_name *t = runtime ? runtime_codes : driver_codes;
	size_t n = runtime ? sizeof(runtime_codes) / sizeof(*t) : sizeof(driver_codes) / sizeof(*t);
	for (size_t i = 0; i < n; i++)
		if (t[i].code == result)
			return t[i].name;
	return NULL;
}
