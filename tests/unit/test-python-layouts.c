/* preload/python-layouts.c: which interpreters get a layout (3.13+ from a
 * _Py_DebugOffsets table, here a fake one), which are refused and why,
 * and the three line-table formats on hand-made tables. The real layouts
 * are checked against real interpreters by t-python-frames. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "preload/python-layouts.h"

static unsigned char table[1024];

static int fake_read(void *dst, uintptr_t addr, size_t n)
{
	uintptr_t base = (uintptr_t)table;
	if (addr < base || addr + n > base + sizeof table)
		return 0;
	memcpy(dst, (const void *)addr, n);
	return 1;
}

static void put(int pos, uint64_t v)
{
	memcpy(table + pos, &v, sizeof v);
}

/* A 3.14.0 table: positions from pycore_debug_offsets.h, values made up. */
static void fake_314(uint64_t version, uint64_t free_threaded)
{
	memset(table, 0, sizeof table);
	memcpy(table, "xdebugpy", 8);
	put(8, version);
	put(16, free_threaded);
	put(176, 400); /* thread state size */
	put(208, 72);  /* current_frame */
	put(248, 80);  /* frame size */
	put(256, 8);
	put(264, 0);
	put(272, 56);
	put(288, 74);
	put(312, 220); /* code size */
	put(320, 112);
	put(336, 128);
	put(344, 136);
	put(352, 68);
	put(384, 208);
	put(640, 40); /* PyASCIIObject */
}

static void layouts(void)
{
	char why[200];
	const struct gmt_py_layout *l = gmt_py_layout_for(11, 0, fake_read, why, sizeof why);
	CHECK(l && l->f_is_entry == 68 && l->cframe_frame == 8, "3.11 fixed layout");
	l = gmt_py_layout_for(8, 0, fake_read, why, sizeof why);
	CHECK(!l && strstr(why, "3.9 to 3.14"), "3.8 refused: %s", why);

	fake_314(0x030e00f0, 0);
	l = gmt_py_layout_for(14, (uintptr_t)table, fake_read, why, sizeof why);
	CHECK(l, "3.14 from its debug offsets: %s", why);
	if (l) {
		CHECK(l->ts_frame == 72 && l->f_previous == 8 && l->f_code == 0 &&
			  l->f_instr == 56 && l->f_owner == 74,
		      "3.14 frame offsets");
		CHECK(l->co_filename == 112 && l->co_name == 128 && l->co_linetable == 136 &&
			  l->co_firstlineno == 68 && l->co_code == 208,
		      "3.14 code offsets");
		CHECK(l->code_tag_mask == 3 && l->owner_cstack == 3 && l->owner_not_code == 3,
		      "3.14 tagged f_executable, owners");
		CHECK(l->co_firsttraceable == 192, "3.14 _co_firsttraceable");
		CHECK(l->str_ascii_data == 40 && l->str_compact_data == 56, "3.14 strings");
	}
	put(384, 216); /* co_code_adaptive elsewhere: _co_firsttraceable unknown */
	l = gmt_py_layout_for(14, (uintptr_t)table, fake_read, why, sizeof why);
	CHECK(l && l->co_firsttraceable == -1 && l->co_code == 216, "3.14, another code layout");
	fake_314(0x030e00f0, 1);
	l = gmt_py_layout_for(14, (uintptr_t)table, fake_read, why, sizeof why);
	CHECK(!l && strstr(why, "free-threaded"), "free-threaded refused: %s", why);
	fake_314(0x030f00a1, 0);
	l = gmt_py_layout_for(15, (uintptr_t)table, fake_read, why, sizeof why);
	CHECK(!l && strstr(why, "3.15") && strstr(why, "knows no"), "3.15 refused: %s", why);
	fake_314(0x030d0000, 0);
	l = gmt_py_layout_for(14, (uintptr_t)table, fake_read, why, sizeof why);
	CHECK(!l, "a 3.13 table for a 3.14 interpreter refused");
	fake_314(0x030e00f0, 0);
	put(264, 4000); /* f_executable beyond the frame */
	l = gmt_py_layout_for(14, (uintptr_t)table, fake_read, why, sizeof why);
	CHECK(!l && strstr(why, "look wrong"), "implausible offsets refused: %s", why);
	fake_314(0x030e00f0, 0);
	memcpy(table, "xdebugpz", 8);
	l = gmt_py_layout_for(14, (uintptr_t)table, fake_read, why, sizeof why);
	CHECK(!l, "a wrong cookie refused");
	l = gmt_py_layout_for(13, 0, fake_read, why, sizeof why);
	CHECK(!l && strstr(why, "not found"), "3.13 without _PyRuntime refused: %s", why);
}

static void lines(void)
{
	/* 3.9 lnotab: (+6 bytes, +1 line), (+4 bytes, +2 lines) */
	const unsigned char lnotab[] = {6, 1, 4, 2};
	long at39[] = {-1, 0, 5, 6, 9, 10, 40};
	int want39[] = {20, 20, 20, 21, 21, 23, 23};
	for (size_t i = 0; i < sizeof at39 / sizeof at39[0]; i++)
		CHECK(gmt_py_line(GMT_PY_LNOTAB, lnotab, sizeof lnotab, 20, at39[i]) == want39[i],
		      "3.9 byte %ld", at39[i]);
	/* 3.10: 4 bytes +0, 2 bytes +1, 2 bytes no line, 4 bytes +2 */
	const unsigned char lt[] = {4, 0, 2, 1, 2, 0x80, 4, 2};
	long at310[] = {0, 3, 4, 6, 8, 11, 12};
	int want310[] = {5, 5, 6, 0, 8, 8, 0};
	for (size_t i = 0; i < sizeof at310 / sizeof at310[0]; i++)
		CHECK(gmt_py_line(GMT_PY_LINETABLE, lt, sizeof lt, 5, at310[i]) == want310[i],
		      "3.10 byte %ld", at310[i]);
	/* 3.11+: code 13 (+0, 2 units), code 11 (+1, 1 unit, 2 column bytes),
	 * code 15 (no line, 1 unit), code 14 (-1 then 3 varints, 1 unit),
	 * code 0 (short form, 1 unit) */
	const unsigned char loc[] = {0xE9, 0x00, 0xD8, 0x01, 0x02, 0xF8, 0xF0,
				     0x03, 0x00, 0x01, 0x02, 0x80, 0x05};
	long at311[] = {-2, 0, 2, 4, 6, 8, 10, 12};
	int want311[] = {10, 10, 10, 11, 0, 10, 10, 0};
	for (size_t i = 0; i < sizeof at311 / sizeof at311[0]; i++)
		CHECK(gmt_py_line(GMT_PY_LOCATIONS, loc, sizeof loc, 10, at311[i]) == want311[i],
		      "3.11 byte %ld: %d", at311[i],
		      gmt_py_line(GMT_PY_LOCATIONS, loc, sizeof loc, 10, at311[i]));
}

int main(void)
{
	layouts();
	lines();
	return failures ? 1 : 0;
}
