/* The layout facts under tests/sim/sim-cuda.h (which includes cuda-types.h). */
#include "sim-cuda.h"
#include "layout.h"

GMT_LAYOUT_TABLE(gmt_layout_sim_ours, GMT_LAYOUT_SIM, GMT_ROW_CONSTX_OURS)
