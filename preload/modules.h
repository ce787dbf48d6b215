/* The module map: every loaded ELF object with its path, address range and
 * build-id, so stacks can be symbolized at exit or later, elsewhere. Owned by
 * the writer (flush thread, or the finishing thread once it has stopped). */
#ifndef GMT_MODULES_H
#define GMT_MODULES_H

#include <stdint.h>

struct gmt_module {
	uint32_t id;
	uint64_t load_bias, start, end;
	char *path;
	char *loaded_as; /* the loader's relative name, when path differs; else NULL */
	uint8_t build_id[64];
	unsigned build_id_len;
	int emitted;
};

struct gmt_modules {
	struct gmt_module *v;
	uint32_t n, cap;
	unsigned long long seen_adds; /* dl_iterate_phdr's dlpi_adds at the last scan */
};

/* Adds modules loaded since the last scan; returns how many are new. Cheap
 * when nothing was loaded (compares the loader's counter). */
int gmt_modules_scan(struct gmt_modules *m);
const struct gmt_module *gmt_modules_find(const struct gmt_modules *m, uint64_t addr);
void gmt_modules_reset(struct gmt_modules *m);

#endif
