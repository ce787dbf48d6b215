#include "preload/modules.h"

#include <elf.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* Enough for any process seen (a PyTorch job maps some 700 objects);
 * past it, modules are left out and their frames stay unnamed. The slots
 * are BSS: untouched pages cost nothing. */
enum { MODULES_MAX = 16384 };

static struct {
	pthread_mutex_t scan_lock; /* scans, one at a time; readers never take it */
	struct gmt_module *v[MODULES_MAX];
	uint32_t n; /* published: v[0..n) are whole (release store, acquire loads) */
	unsigned long long seen_adds; /* dl_iterate_phdr's dlpi_adds at the last scan */
} mods = {.scan_lock = PTHREAD_MUTEX_INITIALIZER};

static int known(uint64_t bias, uint64_t start, const char *name)
{
	for (uint32_t i = 0; i < mods.n; i++) {
		const struct gmt_module *v = mods.v[i];
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
	int *added = data;
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
	if (known(info->dlpi_addr, lo, path))
		return 0;
	if (path[0] != '/' && mapped_file(lo, exe, sizeof exe) == 0) {
		/* Loaded by a relative path (LD_PRELOAD=./lib.so, a relative
		 * LD_LIBRARY_PATH), which symbolizers, ours and the CLI's later,
		 * elsewhere, cannot open: name the file the kernel mapped,
		 * whatever the working directory is now. */
		loaded_as = path;
		path = exe;
	}
	if (mods.n == MODULES_MAX)
		return 1;
	struct gmt_module *mod = calloc(1, sizeof *mod);
	if (!mod)
		return 1;
	mod->path = strdup(path);
	mod->loaded_as = loaded_as ? strdup(loaded_as) : NULL;
	if (!mod->path || (loaded_as && !mod->loaded_as)) {
		free(mod->path);
		free(mod->loaded_as);
		free(mod);
		return 1;
	}
	mod->id = mods.n + 1;
	mod->load_bias = info->dlpi_addr;
	mod->start = lo;
	mod->end = hi;
	mod->build_id_len = read_build_id(info, mod->build_id, sizeof mod->build_id);
	mods.v[mods.n] = mod;
	/* Pairs with the acquire load in gmt_modules_count: the entry is
	 * whole before anyone can see it. */
	__atomic_store_n(&mods.n, mods.n + 1, __ATOMIC_RELEASE);
	(*added)++;
	return 0;
}

static int read_adds(struct dl_phdr_info *info, size_t size, void *data)
{
	*(unsigned long long *)data = info->dlpi_adds;
	return 1;
}

int gmt_modules_scan(void)
{
	unsigned long long adds = 0;
	int added = 0;
	pthread_mutex_lock(&mods.scan_lock);
	dl_iterate_phdr(read_adds, &adds);
	if (!mods.n || adds != mods.seen_adds) {
		dl_iterate_phdr(scan_one, &added);
		mods.seen_adds = adds;
	}
	pthread_mutex_unlock(&mods.scan_lock);
	return added;
}

uint32_t gmt_modules_count(void)
{
	return __atomic_load_n(&mods.n, __ATOMIC_ACQUIRE);
}

const struct gmt_module *gmt_modules_at(uint32_t i)
{
	return i < gmt_modules_count() ? mods.v[i] : NULL;
}

const struct gmt_module *gmt_modules_find(uint64_t addr)
{
	uint32_t n = gmt_modules_count();
	for (uint32_t i = 0; i < n; i++)
		if (addr >= mods.v[i]->start && addr < mods.v[i]->end)
			return mods.v[i];
	return NULL;
}

void gmt_modules_fork_child(void)
{
	pthread_mutex_init(&mods.scan_lock, NULL);
}
