/* Compares the layout tables built under our headers with those built under
 * the toolkit's; prints every difference; exits 1 if there is one. */
#include <stdio.h>
#include <string.h>

#include "layout.h"

size_t gmt_layout_hooks_ours(const struct gmt_layout_row **rows);
size_t gmt_layout_hooks_toolkit(const struct gmt_layout_row **rows);
size_t gmt_layout_sim_ours(const struct gmt_layout_row **rows);
size_t gmt_layout_sim_toolkit(const struct gmt_layout_row **rows);

static int compare(const char *what, size_t (*ours)(const struct gmt_layout_row **),
		   size_t (*theirs)(const struct gmt_layout_row **))
{
	const struct gmt_layout_row *a, *b;
	size_t na = ours(&a), nb = theirs(&b), bad = 0;
	if (na != nb) {
		printf("%s: %zu facts vs %zu\n", what, na, nb);
		return 1;
	}
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i].fact, b[i].fact) || a[i].value != b[i].value) {
			printf("%s: %s = %lld, toolkit %lld\n", what, a[i].fact, a[i].value,
			       b[i].value);
			bad++;
		}
	printf("%s: %zu facts, %zu differ\n", what, na, bad);
	return bad != 0;
}

int main(void)
{
	int bad = compare("common/cuda-types.h", gmt_layout_hooks_ours, gmt_layout_hooks_toolkit);
	bad |= compare("tests/sim/sim-cuda.h", gmt_layout_sim_ours, gmt_layout_sim_toolkit);
	return bad;
}
