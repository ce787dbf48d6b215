/* One allocation and its free on the simulated CUDA, then exit: the
 * per-process cost of tracing (bench/proccost.sh, issue 30.5). */
#include "sim-primary.h"

int main(void)
{
	CUdeviceptr p = 0;
	if (sim_use_primary_context() != 0 || cuMemAlloc_v2(&p, 1 << 20) != CUDA_SUCCESS)
		return 2;
	return cuMemFree_v2(p) == CUDA_SUCCESS ? 0 : 3;
}
