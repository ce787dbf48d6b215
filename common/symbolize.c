#include "common/symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct gmt_symbolizer {
	Dwfl *dwfl;
};

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

struct gmt_symbolizer *gmt_symbolizer_new(void)
{
	struct gmt_symbolizer *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->dwfl = dwfl_begin(&callbacks);
	if (!s->dwfl) {
		free(s);
		return NULL;
	}
	return s;
}

void gmt_symbolizer_free(struct gmt_symbolizer *s)
{
	if (!s)
		return;
	dwfl_end(s->dwfl);
	free(s);
}

/* 1: the file's build-id is `want`; 0: it differs or the file is unreadable. */
static int build_id_matches(const char *path, const uint8_t *want, unsigned want_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int ok = 0;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf) {
		const void *id;
		ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
		ok = n == (ssize_t)want_len && !memcmp(id, want, want_len);
		elf_end(elf);
	}
	close(fd);
	return ok;
}

int gmt_symbolizer_add_module(struct gmt_symbolizer *s, const char *path, uint64_t load_bias,
			      uint64_t start, uint64_t end, const uint8_t *build_id,
			      unsigned build_id_len)
{
	if (!s || !path || path[0] != '/')
		return -1; /* [vdso] and friends: no file to read */
	elf_version(EV_CURRENT);
	if (build_id && build_id_len && !build_id_matches(path, build_id, build_id_len))
		return -1;
	dwfl_report_begin_add(s->dwfl);
	Dwfl_Module *mod = dwfl_report_elf(s->dwfl, path, path, -1, load_bias, false);
	dwfl_report_end(s->dwfl, NULL, NULL);
	return mod ? 0 : -1;
}

/* The line table names the innermost inlined code, but the function name
 * comes from the symbol table: the function that was really called. When pc
 * is inside inlined code, name instead the line of that function where the
 * outermost inlined call sits, so function and file:line are one frame. */
static void call_site_of_inlined(Dwfl_Module *mod, uint64_t pc, struct gmt_symbol *out)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias);
	Dwarf_Die *scopes = NULL;
	int n = cu ? dwarf_getscopes(cu, pc - bias, &scopes) : 0;
	int outer = -1;
	for (int i = 0; i < n; i++) /* innermost first: the last one found is outermost */
		if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine)
			outer = i;
	if (outer >= 0) {
		Dwarf_Attribute attr;
		Dwarf_Word call_line = 0, call_file = 0;
		Dwarf_Files *files;
		size_t nfiles;
		if (dwarf_formudata(dwarf_attr(&scopes[outer], DW_AT_call_line, &attr),
				    &call_line) == 0)
			out->line = (unsigned)call_line;
		if (dwarf_formudata(dwarf_attr(&scopes[outer], DW_AT_call_file, &attr),
				    &call_file) == 0 &&
		    dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && call_file < nfiles) {
			const char *f = dwarf_filesrc(files, call_file, NULL, NULL);
			if (f)
				out->file = f;
		}
	}
	free(scopes);
}

int gmt_symbolize(struct gmt_symbolizer *s, uint64_t pc, struct gmt_symbol *out)
{
	memset(out, 0, sizeof *out);
	if (!s)
		return -1;
	Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, pc);
	if (!mod)
		return -1;
	GElf_Off off;
	GElf_Sym sym;
	out->function = dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL);
	Dwfl_Line *line = dwfl_module_getsrc(mod, pc);
	if (line) {
		int lineno = 0;
		out->file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
		out->line = lineno > 0 ? (unsigned)lineno : 0;
	}
	call_site_of_inlined(mod, pc, out);
	return out->function ? 0 : -1;
}
