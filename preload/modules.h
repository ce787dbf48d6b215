/* The module map: every loaded ELF object with its path, address range and
 * build-id, so that frames can be named after the run, elsewhere (MODULE
 * records). One table for the process (preload/modules.c): scans append
 * to it, and readers (the writer, the naming thread) read what is
 * published without a lock, so a scan stuck on the loader's lock never
 * holds up the flush thread or the exit. */
#ifndef GMT_MODULES_H
#define GMT_MODULES_H

#include <stdint.h>

struct gmt_module {
	uint32_t id; /* its index + 1 */
	uint64_t load_bias, start, end;
	char *path;
	char *loaded_as; /* the loader's relative name, when path differs; else NULL */
	uint8_t build_id[64];
	unsigned build_id_len;
};

/* Adds the modules loaded since the last scan; returns how many. Takes the
 * loader's lock (dl_iterate_phdr) and allocates: never on the flush thread
 * nor at exit, only on our threads that may wait (the file's creation, the
 * scanning thread). Cheap when nothing was loaded (the loader's counter). */
int gmt_modules_scan(void);
/* How many modules are published; gmt_modules_at(i) for i below it never
 * changes. Any thread, no lock. */
uint32_t gmt_modules_count(void);
const struct gmt_module *gmt_modules_at(uint32_t i);
const struct gmt_module *gmt_modules_find(uint64_t addr);
/* The child of fork: a scan the fork cut short leaves nothing held. */
void gmt_modules_fork_child(void);

#endif
