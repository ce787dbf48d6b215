/* The files that name a module's frames: the module's own file, checked by
 * build-id, else one found by build-id (a moved or replaced file), and its
 * separate debug file. Every path comes from a trace or is made from one:
 * nothing is opened unless it is a regular file, and never blocking, so a
 * FIFO or a device named in a hostile trace cannot stop the reader. */
#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/symbolize-int.h"

static const char default_root[] = "/usr/lib/debug";

enum {
	SCAN_DEPTH = 8,	       /* folders below a path folder */
	SCAN_ENTRIES = 50000,  /* names looked at under all path folders together */
	SCAN_MAX_FOUND = 8192, /* ELF files kept from them */
};

/* path as an fd when it is a regular file: checked before the open (so a
 * FIFO or a device is never opened) and after it (it may have been swapped
 * in between), and opened O_NONBLOCK. -1 with *why otherwise. */
static int open_regular(const char *path, enum gmt_symmod_state *why)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		*why = GMT_SYMMOD_MISSING;
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		*why = GMT_SYMMOD_NOT_FILE;
		return -1;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		*why = errno == ENOENT ? GMT_SYMMOD_MISSING : GMT_SYMMOD_NOT_ELF;
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		*why = GMT_SYMMOD_NOT_FILE;
		return -1;
	}
	return fd;
}

/* 1: the ELF file's GNU build-id is id (len 0: any ELF file); 0: another
 * or none; -1: not an ELF file. */
static int build_id_is(int fd, const uint8_t *id, unsigned len)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -1;
	int r = -1;
	if (elf_kind(elf) == ELF_K_ELF) {
		const void *got = NULL;
		ssize_t n = dwelf_elf_gnu_build_id(elf, &got);
		r = len == 0 || (n == (ssize_t)len && !memcmp(got, id, len));
	}
	elf_end(elf);
	return r;
}

/* path as an fd when it is a regular ELF file with build-id id. */
static int open_with_id(const char *path, const uint8_t *id, unsigned len)
{
	enum gmt_symmod_state why;
	int fd = open_regular(path, &why);
	if (fd >= 0 && build_id_is(fd, id, len) != 1) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* ROOT/.build-id/ab/cdef...SUFFIX, as gdb and elfutils lay debug files out. */
static const char *build_id_path(char *buf, size_t cap, const char *root, const uint8_t *id,
				 unsigned len, const char *suffix)
{
	int n = snprintf(buf, cap, "%s/.build-id/%02x/", root, id[0]);
	for (unsigned i = 1; i < len && n > 0 && (size_t)n + 3 < cap; i++)
		n += snprintf(buf + n, cap - (size_t)n, "%02x", id[i]);
	if (n > 0 && (size_t)n < cap)
		snprintf(buf + n, cap - (size_t)n, "%s", suffix);
	return buf;
}

static void keep_found(struct gmt_symfiles *s, const char *path, const void *id, size_t len)
{
	if (s->nfound >= SCAN_MAX_FOUND || !len)
		return;
	if (s->nfound % 64 == 0) {
		struct sym_found *v = realloc(s->found, (s->nfound + 64) * sizeof(*v));
		if (!v)
			return;
		s->found = v;
	}
	struct sym_found *f = &s->found[s->nfound];
	f->id = malloc(len);
	f->path = strdup(path);
	if (!f->id || !f->path) {
		free(f->id);
		free(f->path);
		return;
	}
	memcpy(f->id, id, len);
	f->len = (unsigned)len;
	s->nfound++;
}

/* Every ELF file under dir (depth and entries bounded), by build-id. */
static void scan_dir(struct gmt_symfiles *s, const char *dir, int depth, size_t *budget)
{
	DIR *d = opendir(dir); /* O_DIRECTORY: a FIFO fails at once */
	if (!d)
		return;
	struct dirent *e;
	char path[PATH_MAX];
	while (*budget && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		--*budget;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		struct stat st;
		if (lstat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) { /* not through links: no loops */
			if (depth < SCAN_DEPTH)
				scan_dir(s, path, depth + 1, budget);
			continue;
		}
		enum gmt_symmod_state why;
		int fd = open_regular(path, &why);
		if (fd < 0)
			continue;
		char magic[4];
		Elf *elf = NULL;
		if (pread(fd, magic, 4, 0) == 4 && !memcmp(magic, "\177ELF", 4))
			elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		const void *id = NULL;
		ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &id) : 0;
		if (n > 0)
			keep_found(s, path, id, (size_t)n);
		if (elf)
			elf_end(elf);
		close(fd);
	}
	closedir(d);
}

static int set_found(struct sym_file *m, const char *path, int fd)
{
	free(m->found_at);
	m->found_at = strdup(path);
	return fd;
}

/* m's file found by its build-id in the folders of the path. */
static int find_by_id(struct gmt_symfiles *s, struct sym_file *m)
{
	char path[PATH_MAX];
	const uint8_t *id = m->build_id;
	unsigned len = m->build_id_len;
	static const char *const suffixes[] = {"", ".debug"};
	for (size_t i = 0; i <= s->ndirs; i++)
		for (size_t k = 0; k < 2; k++) {
			const char *root = i < s->ndirs ? s->dirs[i] : default_root;
			build_id_path(path, sizeof(path), root, id, len, suffixes[k]);
			int fd = open_with_id(path, id, len);
			if (fd >= 0)
				return set_found(m, path, fd);
		}
	const char *slash = strrchr(m->path, '/');
	const char *base = slash ? slash + 1 : m->path;
	for (size_t i = 0; *base && i < s->ndirs; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", s->dirs[i], base) >= (int)sizeof(path))
			continue;
		int fd = open_with_id(path, id, len);
		if (fd >= 0)
			return set_found(m, path, fd);
	}
	if (!s->found_scanned) {
		s->found_scanned = true;
		size_t budget = SCAN_ENTRIES;
		for (size_t i = 0; i < s->ndirs; i++)
			scan_dir(s, s->dirs[i], 0, &budget);
	}
	for (size_t i = 0; i < s->nfound; i++) {
		const struct sym_found *f = &s->found[i];
		if (f->len != len || memcmp(f->id, id, len))
			continue;
		int fd = open_with_id(f->path, id, len);
		if (fd >= 0)
			return set_found(m, f->path, fd);
	}
	return -1;
}

int gmt_sym_open_file(struct gmt_symfiles *s, struct sym_file *m)
{
	enum gmt_symmod_state why = GMT_SYMMOD_NO_PATH;
	if (m->path[0] == '/') {
		int fd = open_regular(m->path, &why);
		if (fd >= 0) {
			int r = build_id_is(fd, m->build_id, m->build_id_len);
			if (r == 1) {
				m->state = GMT_SYMMOD_OK;
				return fd;
			}
			why = r == 0 ? GMT_SYMMOD_REPLACED : GMT_SYMMOD_NOT_ELF;
			close(fd);
		}
	}
	if (m->build_id_len) {
		int fd = find_by_id(s, m);
		if (fd >= 0) {
			m->state = GMT_SYMMOD_MOVED;
			return fd;
		}
	}
	m->state = why;
	return -1;
}

/* ---- libdwfl's callbacks ---- */

static int find_elf_none(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
			 char **file_name, Elf **elfp)
{
	return -1; /* every module is reported with its fd */
}

static int debug_fd(const char *path, const unsigned char *id, int len, const char *main_file,
		    char **debuginfo_file_name)
{
	if (main_file && !strcmp(path, main_file))
		return -1;
	int fd = len > 0 ? open_with_id(path, id, (unsigned)len) : -1;
	if (len <= 0) { /* no build-id to check: a regular ELF file will do */
		enum gmt_symmod_state why;
		fd = open_regular(path, &why);
		if (fd >= 0 && build_id_is(fd, NULL, 0) != 1) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		*debuginfo_file_name = strdup(path);
	return fd;
}

/* The separate debug file: by build-id under each folder of the path and
 * /usr/lib/debug, then by .gnu_debuglink beside the file, in its .debug/,
 * and under /usr/lib/debug. Never debuginfod: the reader makes no network
 * requests. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const struct gmt_symfiles *s = userdata ? *userdata : NULL;
	size_t ndirs = s ? s->ndirs : 0;
	const unsigned char *id = NULL;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &id, &vaddr);
	char path[PATH_MAX];
	for (size_t i = 0; len > 0 && i <= ndirs; i++) {
		const char *root = i < ndirs ? s->dirs[i] : default_root;
		build_id_path(path, sizeof(path), root, id, (unsigned)len, ".debug");
		int fd = debug_fd(path, id, len, file_name, debuginfo_file_name);
		if (fd >= 0)
			return fd;
	}
	if (!debuglink_file || !file_name || strchr(debuglink_file, '/'))
		return -1;
	const char *slash = strrchr(file_name, '/');
	int dirlen = slash ? (int)(slash - file_name) : 0;
	for (size_t i = 0; i < ndirs + 3; i++) {
		int n;
		if (i == 0)
			n = snprintf(path, sizeof(path), "%.*s/%s", dirlen, file_name,
				     debuglink_file);
		else if (i == 1)
			n = snprintf(path, sizeof(path), "%.*s/.debug/%s", dirlen, file_name,
				     debuglink_file);
		else
			n = snprintf(path, sizeof(path), "%s%.*s/%s",
				     i - 2 < ndirs ? s->dirs[i - 2] : default_root, dirlen,
				     file_name, debuglink_file);
		if (n <= 0 || n >= (int)sizeof(path))
			continue;
		int fd = debug_fd(path, id, len, file_name, debuginfo_file_name);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

static char *no_debuginfo_path;

const Dwfl_Callbacks gmt_sym_callbacks = {
    .find_elf = find_elf_none,
    .find_debuginfo = find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &no_debuginfo_path,
};
