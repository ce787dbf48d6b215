#include "preload/modules.h"

#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

struct scan_ctx {
	struct gmt_modules *m;
	int added;
};

static int known(const struct gmt_modules *m, uint64_t bias, uint64_t start, const char *name)
{
	for (uint32_t i = 0; i < m->n; i++) {
		const struct gmt_module *v = &m->v[i];
		if (v->load_bias == bias && v->start == start &&
		    !strcmp(v->loaded_as ? v->loaded_as : v->path, name))
			return 1;
	}
	return 0;
}

/* The file the kernel has mapped at addr, from /proc/self/maps: absolute
 * whatever the working directory is now. Writes it to out; 0 on success. */
static int mapped_file(uint64_t addr, char *out, size_t cap)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -1;
	char line[PATH_MAX + 128];
	int found = -1;
	while (found && fgets(line, sizeof line, f)) {
		size_t len = strlen(line);
		if (len && line[len - 1] != '\n') { /* too long: skip the rest of it */
			int c;
			while ((c = getc(f)) != EOF && c != '\n')
				;
			continue;
		}
		unsigned long lo, hi;
		int at = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) < 2 || !at ||
		    addr < lo || addr >= hi)
			continue;
		char *path = line + at;
		path[strcspn(path, "\n")] = '\0';
		static const char deleted[] = " (deleted)";
		size_t n = strlen(path), nd = sizeof deleted - 1;
		/* [vdso], anonymous, or a file replaced since: none to open. */
		if (path[0] != '/' || n >= cap || (n > nd && !strcmp(path + n - nd, deleted)))
			break;
		memcpy(out, path, n + 1);
		found = 0;
	}
	fclose(f);
	return found;
}

static unsigned read_build_id(const struct dl_phdr_info *info, uint8_t *out, unsigned cap)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)p;
			size_t name_sz = (nh->n_namesz + 3) & ~3u,
			       desc_sz = (nh->n_descsz + 3) & ~3u;
			const uint8_t *desc = p + sizeof *nh + name_sz;
			if (desc + desc_sz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(p + sizeof *nh, "GNU", 4)) {
				unsigned n = nh->n_descsz < cap ? nh->n_descsz : cap;
				memcpy(out, desc, n);
				return n;
			}
			p = desc + desc_sz;
		}
	}
	return 0;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct scan_ctx *c = data;
	struct gmt_modules *m = c->m;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
		lo = s < lo ? s : lo;
		hi = e > hi ? e : hi;
	}
	if (hi <= lo)
		return 0;
	char exe[PATH_MAX];
	const char *path = info->dlpi_name, *loaded_as = NULL;
	if (!path || !*path) {
		/* The main program has no name here. */
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		exe[n > 0 ? n : 0] = '\0';
		path = exe;
	}
	if (known(m, info->dlpi_addr, lo, path))
		return 0;
	if (path[0] != '/' && mapped_file(lo, exe, sizeof exe) == 0) {
		/* Loaded by a relative path (LD_PRELOAD=./lib.so, a relative
		 * LD_LIBRARY_PATH), which symbolizers, ours at exit and the
		 * CLI's later, elsewhere, cannot open: name the file the kernel
		 * mapped, whatever the working directory is now. */
		loaded_as = path;
		path = exe;
	}
	if (m->n == m->cap) {
		uint32_t cap = m->cap ? m->cap * 2 : 64;
		struct gmt_module *v = realloc(m->v, cap * sizeof *v);
		if (!v)
			return 1;
		m->v = v;
		m->cap = cap;
	}
	struct gmt_module *mod = &m->v[m->n];
	memset(mod, 0, sizeof *mod);
	mod->path = strdup(path);
	mod->loaded_as = loaded_as ? strdup(loaded_as) : NULL;
	if (!mod->path || (loaded_as && !mod->loaded_as)) {
		free(mod->path);
		free(mod->loaded_as);
		return 1;
	}
	mod->id = m->n + 1;
	mod->load_bias = info->dlpi_addr;
	mod->start = lo;
	mod->end = hi;
	mod->build_id_len = read_build_id(info, mod->build_id, sizeof mod->build_id);
	m->n++;
	c->added++;
	return 0;
}

static int read_adds(struct dl_phdr_info *info, size_t size, void *data)
{
	*(unsigned long long *)data = info->dlpi_adds;
	return 1;
}

int gmt_modules_scan(struct gmt_modules *m)
{
	unsigned long long adds = 0;
	dl_iterate_phdr(read_adds, &adds);
	if (m->n && adds == m->seen_adds)
		return 0;
	struct scan_ctx c = {m, 0};
	dl_iterate_phdr(scan_one, &c);
	m->seen_adds = adds;
	return c.added;
}

const struct gmt_module *gmt_modules_find(const struct gmt_modules *m, uint64_t addr)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (addr >= m->v[i].start && addr < m->v[i].end)
			return &m->v[i];
	return NULL;
}

void gmt_modules_reset(struct gmt_modules *m)
{
	for (uint32_t i = 0; i < m->n; i++) {
		free(m->v[i].path);
		free(m->v[i].loaded_as);
	}
	free(m->v);
	memset(m, 0, sizeof *m);
}
