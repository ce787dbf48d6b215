/* The same facts under the toolkit's cuda.h and cuda_runtime_api.h. */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "layout.h"

GMT_LAYOUT_TABLE(gmt_layout_hooks_toolkit, GMT_LAYOUT_HOOKS, GMT_ROW_CONSTX_THEIRS)
GMT_LAYOUT_TABLE(gmt_layout_sim_toolkit, GMT_LAYOUT_SIM, GMT_ROW_CONSTX_THEIRS)
