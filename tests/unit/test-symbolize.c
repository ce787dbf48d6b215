/* common/symbolize.c names functions as libdwfl's own lookup does
 * (dwfl_module_addrinfo: the symbolizer before it was made fast), file:line
 * as libdw's line table has it, and in inlined code the line of the
 * outermost inlined call, as binutils' addr2line -i does (libdw's
 * dwarf_getscopes, which the old symbolizer used, misses some inlined
 * scopes: 6,100 of 13,000 addresses of this binary, 961 of libc's when its
 * debug file is installed; addr2line's file names are not compared: it
 * reads some DWARF 5 file indices of libc's line table one off). At
 * thousands of addresses of this binary (DWARF, .symtab, inlined code) and
 * of libc and libdw as the system ships them (.dynsym only, aliases,
 * IFUNCs, version symbols). And it keeps every answer, misses too. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/symbolize-int.h" /* the shared files, counted */

/* ---- the reference: libdwfl's lookups, as the old symbolizer made them ---- */

static char *debuginfo_path;
static const Dwfl_Callbacks ref_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

static const char *ref_function(Dwfl *dwfl, uint64_t pc)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
	GElf_Off off;
	GElf_Sym sym;
	return mod ? dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL) : NULL;
}

/* ---- the reference for file:line: addr2line -i, outermost frame ---- */

struct loc {
	unsigned line; /* of the outermost call */
	int frames;    /* more than one: pc is in inlined code */
};

/* addr2line's answer for each of n module-relative addresses, or -1 when
 * it cannot be run (binutils missing). */
static int addr2line(const char *path, const uint64_t *rel, size_t n, struct loc *out)
{
	char in[] = "/tmp/gmt-a2l.XXXXXX";
	int fd = mkstemp(in);
	if (fd < 0)
		return -1;
	FILE *f = fdopen(fd, "w");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "0x%lx\n", (unsigned long)rel[i]);
	fclose(f);
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "addr2line -a -i -e '%s' < %s 2>/dev/null", path, in);
	FILE *p = popen(cmd, "r");
	char buf[4096];
	long k = -1;
	while (p && fgets(buf, sizeof(buf), p)) {
		if (!strncmp(buf, "0x", 2)) { /* -a: each address starts its answer */
			if (++k >= (long)n)
				break;
			out[k] = (struct loc){0, 0};
			continue;
		}
		if (k < 0)
			continue;
		char *colon = strrchr(buf, ':');
		if (!colon) /* the last line of the answer is the outermost call */
			continue;
		out[k].line = (unsigned)strtoul(colon + 1, NULL, 10);
		out[k].frames++;
	}
	int rc = p ? pclose(p) : -1;
	unlink(in);
	return rc == 0 && k + 1 == (long)n ? 0 : -1;
}

/* ---- the modules compared ---- */

struct mod {
	char path[512];
	uint64_t bias, start, end;     /* as the library records it */
	uint64_t text_start, text_end; /* the executable PT_LOAD */
};
static struct mod mods[64];
static int nmods;

static int add_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct mod m = {.bias = info->dlpi_addr, .start = UINT64_MAX};
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
		m.start = s < m.start ? s : m.start;
		m.end = e > m.end ? e : m.end;
		if (ph->p_flags & PF_X) {
			m.text_start = s;
			m.text_end = e;
		}
	}
	const char *name = info->dlpi_name;
	if (!name || !*name) {
		ssize_t n = readlink("/proc/self/exe", m.path, sizeof(m.path) - 1);
		m.path[n > 0 ? n : 0] = 0;
	} else {
		snprintf(m.path, sizeof(m.path), "%s", name);
	}
	if (m.path[0] == '/' && m.text_end > m.text_start && nmods < 64)
		mods[nmods++] = m;
	return 0;
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The line table's answer: the old symbolizer's outside inlined code. */
static void ref_line(Dwfl *dwfl, uint64_t pc, struct gmt_symbol *out)
{
	memset(out, 0, sizeof(*out));
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
	Dwfl_Line *line = mod ? dwfl_module_getsrc(mod, pc) : NULL;
	if (line) {
		int lineno = 0;
		out->file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
		out->line = lineno > 0 ? (unsigned)lineno : 0;
	}
}

/* Addresses across m's code, every `step` bytes. */
static int compare_module(struct gmt_symbolizer *s, Dwfl *ref, const struct mod *m, uint64_t step,
			  int *checked, int *inlined)
{
	size_t n = (size_t)((m->text_end - m->text_start + step - 1) / step);
	uint64_t *rel = calloc(n, sizeof(*rel));
	struct loc *a2l = calloc(n, sizeof(*a2l));
	for (size_t i = 0; i < n; i++)
		rel[i] = m->text_start + i * step - m->bias;
	bool have_a2l = addr2line(m->path, rel, n, a2l) == 0;
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t pc = rel[i] + m->bias;
		struct gmt_symbol got, lt;
		gmt_symbolize(s, pc, &got);
		const char *fn = ref_function(ref, pc);
		ref_line(ref, pc, &lt);
		++*checked;
		bool ok = same(fn, got.function), in_inline = have_a2l && a2l[i].frames > 1;
		if (in_inline) {
			++*inlined;
			ok = ok && got.file && got.line == a2l[i].line;
		} else {
			ok = ok && same(got.file, lt.file) && got.line == lt.line;
		}
		if (!ok && bad++ < 5)
			CHECK(0,
			      "%s+0x%lx: got %s %s:%u; want %s, line table %s:%u, addr2line %d "
			      "frames, outermost line %u",
			      m->path, (unsigned long)rel[i], got.function ? got.function : "-",
			      got.file ? got.file : "-", got.line, fn ? fn : "-",
			      lt.file ? lt.file : "-", lt.line, have_a2l ? a2l[i].frames : -1,
			      have_a2l ? a2l[i].line : 0);
	}
	free(rel);
	free(a2l);
	return bad;
}

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

int main(void)
{
	unsetenv("DEBUGINFOD_URLS");
	dl_iterate_phdr(add_one, NULL);
	struct gmt_symbolizer *s = gmt_symbolizer_new();
	Dwfl *ref = dwfl_begin(&ref_callbacks);
	CHECK(s && ref, "symbolizers");
	dwfl_report_begin(ref);
	for (int i = 0; i < nmods; i++) {
		const struct mod *m = &mods[i];
		CHECK(gmt_symbolizer_add_module(s, m->path, m->bias, m->start, m->end, NULL, 0) ==
			  0,
		      "add %s", m->path);
		dwfl_report_elf(ref, m->path, m->path, -1, m->bias, false);
	}
	dwfl_report_end(ref, NULL, NULL);

	int checked = 0, compared = 0, inlined = 0;
	for (int i = 0; i < nmods; i++) {
		const struct mod *m = &mods[i];
		const char *b = base(m->path);
		bool self = i == 0, lib = !strncmp(b, "libc.so", 7) || !strncmp(b, "libdw", 5);
		if (!self && !lib)
			continue;
		/* this binary densely; the big libraries at ~20,000 addresses */
		uint64_t size = m->text_end - m->text_start;
		uint64_t step = self ? 3 : (size / 20000) | 1;
		int bad = compare_module(s, ref, m, step, &checked, &inlined);
		CHECK(bad == 0, "%s: %d of the addresses differ", m->path, bad);
		compared++;
	}
	CHECK(compared >= 2, "only %d modules compared", compared);

	/* Every answer is kept: asking again looks nothing up; a miss too. */
	struct gmt_symbolizer *memo = gmt_symbolizer_new();
	gmt_symbolizer_add_module(memo, mods[0].path, mods[0].bias, mods[0].start, mods[0].end,
				  NULL, 0);
	struct gmt_symbol a;
	struct gmt_symbolizer_stats st;
	for (int k = 0; k < 3; k++) {
		gmt_symbolize(memo, (uint64_t)(uintptr_t)main, &a);
		gmt_symbolize(memo, 8, &a);
	}
	gmt_symbolizer_stats(memo, &st);
	CHECK(st.asked == 2 && st.named == 1 && st.nomod == 1,
	      "asked %lu named %lu nomod %lu for 2 addresses asked 3 times",
	      (unsigned long)st.asked, (unsigned long)st.named, (unsigned long)st.nomod);
	gmt_symbolize(memo, (uint64_t)(uintptr_t)main, &a);
	CHECK(a.function && !strcmp(a.function, "main"), "main is %s", a.function);
	CHECK(a.file && strstr(a.file, "test-symbolize.c"), "main's file is %s", a.file);
	gmt_symbolizer_free(memo);
	printf("%d addresses in %d modules named as libdwfl and addr2line name them (%d in "
	       "inlined code)\n",
	       checked, compared, inlined);
	CHECK(inlined > 100, "%d addresses in inlined code: addr2line (binutils) missing?",
	      inlined);

	/* The deadline: once passed, nothing new is looked up, and it counts. */
	struct gmt_symbolizer *cut = gmt_symbolizer_new();
	gmt_symbolizer_add_module(cut, mods[0].path, mods[0].bias, mods[0].start, mods[0].end, NULL,
				  0);
	gmt_symbolizer_set_deadline(cut, 1);
	CHECK(gmt_symbolize(cut, (uint64_t)(uintptr_t)main, &a) != 0 && !a.function,
	      "named after the deadline");
	gmt_symbolizer_stats(cut, &st);
	CHECK(st.cut == 1 && st.named == 0, "cut %lu", (unsigned long)st.cut);
	struct gmt_symmod_info mi;
	gmt_symbolizer_module(cut, 0, &mi);
	CHECK(mi.state == GMT_SYMMOD_UNUSED, "a module opened after the deadline");
	gmt_symbolizer_free(cut);

	/* Two processes' symbolizers on shared files: the same module at two
	 * load addresses is read once and named alike at both. */
	struct gmt_symfiles *fs = gmt_symfiles_new(NULL);
	struct gmt_symbolizer *p1 = gmt_symbolizer_new_shared(fs),
			      *p2 = gmt_symbolizer_new_shared(fs);
	const struct mod *m0 = &mods[0];
	uint64_t shift = 0x100000000ull;
	gmt_symbolizer_add_module(p1, m0->path, m0->bias, m0->start, m0->end, NULL, 0);
	gmt_symbolizer_add_module(p2, m0->path, m0->bias + shift, m0->start + shift,
				  m0->end + shift, NULL, 0);
	int differ = 0, named = 0;
	for (uint64_t pc = m0->text_start; pc < m0->text_end; pc += 97) {
		struct gmt_symbol x, y;
		gmt_symbolize(p1, pc, &x);
		gmt_symbolize(p2, pc + shift, &y);
		named += x.function != NULL;
		differ +=
		    !same(x.function, y.function) || !same(x.file, y.file) || x.line != y.line;
	}
	CHECK(named > 100 && differ == 0, "shared files: %d named, %d differ", named, differ);
	CHECK(fs->n == 1, "the module's file was read %zu times", fs->n);
	gmt_symbolizer_free(p1);
	gmt_symbolizer_free(p2);
	gmt_symfiles_free(fs);

	gmt_symbolizer_free(s);
	dwfl_end(ref);
	return failures ? 1 : 0;
}
