/* The layout facts under common/cuda-types.h alone. */
#include "common/cuda-types.h"
#include "layout.h"

GMT_LAYOUT_TABLE(gmt_layout_hooks_ours, GMT_LAYOUT_HOOKS, GMT_ROW_CONSTX_OURS)
