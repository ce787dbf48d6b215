#include "preload/modules.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/mem.h"

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
	struct gmt_arena arena;	      /* the entries, under scan_lock */
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

/* One line of /proc/self/maps at a time, with no malloc (no stdio: this
 * runs inside dl_iterate_phdr). Returns the line's length without its
 * newline, or -1 at the end; a line longer than the buffer is skipped. */
struct maps_reader {
	int fd;
	size_t len, at;
	char buf[PATH_MAX + 256];
};

static ssize_t maps_line(struct maps_reader *m, char **line)
{
	for (int skipping = 0;;) {
		char *nl = memchr(m->buf + m->at, '\n', m->len - m->at);
		if (nl) {
			*line = m->buf + m->at;
			size_t n = (size_t)(nl - *line);
			m->at += n + 1;
			if (!skipping)
				return (ssize_t)n;
			skipping = 0;
			continue;
		}
		if (m->at == 0 && m->len == sizeof m->buf - 1) { /* too long */
			skipping = 1;
			m->len = 0;
		} else {
			memmove(m->buf, m->buf + m->at, m->len - m->at);
			m->len -= m->at;
		}
		m->at = 0;
		ssize_t k = read(m->fd, m->buf + m->len, sizeof m->buf - 1 - m->len);
		if (k <= 0)
			return -1;
		m->len += (size_t)k;
	}
}

/* The file the kernel has mapped at addr, from /proc/self/maps: absolute
 * whatever the working directory is now. Writes it to out; 0 on success. */
static int mapped_file(uint64_t addr, char *out, size_t cap)
{
	static struct maps_reader m; /* under scan_lock; too big for the stack */
	m.fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (m.fd < 0)
		return -1;
	m.len = m.at = 0;
	int found = -1;
	char *line;
	ssize_t len;
	while (found && (len = maps_line(&m, &line)) >= 0) {
		line[len] = '\0';
		unsigned long lo, hi;
		int at = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) < 2 || !at ||
		    addr < lo || addr >= hi)
			continue;
		char *path = line + at;
		static const char deleted[] = " (deleted)";
		size_t n = strlen(path), nd = sizeof deleted - 1;
		/* [vdso], anonymous, or a file replaced since: none to open. */
		if (path[0] != '/' || n >= cap || (n > nd && !strcmp(path + n - nd, deleted)))
			break;
		memcpy(out, path, n + 1);
		found = 0;
	}
	close(m.fd);
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
	/* Never malloc: we hold the loader's lock (preload/mem.h). */
	struct gmt_module *mod = gmt_arena_alloc(&mods.arena, sizeof *mod);
	if (!mod)
		return 1;
	mod->path = gmt_arena_strdup(&mods.arena, path);
	mod->loaded_as = loaded_as ? gmt_arena_strdup(&mods.arena, loaded_as) : NULL;
	if (!mod->path || (loaded_as && !mod->loaded_as))
		return 1; /* what it took stays in the arena: out of memory anyway */
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
	/* A scan the fork cut short may have left it half updated: a fresh
	 * map for the child's entries (the old ones stay where they are). */
	mods.arena = (struct gmt_arena){NULL, 0};
}
