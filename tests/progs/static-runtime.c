/* The static-runtime route: the program uses libfakeblas.so, which embeds
 * the CUDA runtime the way NVIDIA's libraries do (see fakeblas.c). It never
 * calls CUDA itself. Allocations: one 4 MiB workspace (cuMemAlloc_v2 from
 * inside libfakeblas.so) and its cuMemFree_v2. */
#include <stdio.h>

struct fakeblas;
int fakeblas_create(struct fakeblas **out);
int fakeblas_destroy(struct fakeblas *h);
size_t fakeblas_workspace_size(const struct fakeblas *h);

int main(void)
{
	struct fakeblas *h;
	int e = fakeblas_create(&h);
	printf("fakeblas_create = %d\n", e);
	if (e)
		return 1;
	printf("workspace = %zu bytes\n", fakeblas_workspace_size(h));
	e = fakeblas_destroy(h);
	printf("fakeblas_destroy = %d\n", e);
	printf("static-runtime: %s\n", e ? "FAILED" : "ok");
	return e ? 1 : 0;
}
