/* varint, zigzag, little-endian fields, CRC-32C and a chunk's frame
 * against known values. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "common/chunk.h"
#include "common/codec.h"
#include "gpumemtrace/format.h"
#include "check.h"

/* The frame every writer uses (common/chunk.c): the header's fields, and a
 * compressed body that decompresses to the records, its length first. */
static void chunk_frame(void)
{
	uint8_t c[GMT_CHUNK_HEADER_SIZE + 9];
	memcpy(c + GMT_CHUNK_HEADER_SIZE, "123456789", 9);
	gmt_chunk_seal(c, false, 9, 7);
	CHECK(gmt_get_le32(c) == GMT_CHUNK_MAGIC && gmt_get_le32(c + 4) == 9 &&
		  gmt_get_le32(c + 8) == 7 && gmt_get_le32(c + 12) == 0xe3069283u,
	      "chunk header: magic, length, sequence, the body's CRC-32C");
	gmt_chunk_seal(c, true, 9, 8);
	CHECK(gmt_get_le32(c) == GMT_CHUNK_MAGIC_ZSTD, "compressed chunk magic");
	const struct gmt_dl dl = {dlopen, dlsym, dlclose};
	const struct gmt_zstd *z = gmt_zstd_get(&dl, NULL);
	if (!z) {
		puts("chunk compression: libzstd.so.1 not here, skipped");
		return;
	}
	static uint8_t records[4096], body[GMT_VARINT_MAX + 8192], back[4096];
	for (size_t i = 0; i < sizeof records; i++)
		records[i] = (uint8_t)(i % 7);
	ZSTD_CCtx *cctx = z->ZSTD_createCCtx();
	size_t n = gmt_chunk_compress(z, cctx, 1, body, records, sizeof records);
	struct gmt_cursor cur = {body, body + n, 0};
	CHECK(n > 0 && n < sizeof records && gmt_get_varint(&cur) == sizeof records,
	      "compressed body: smaller, the records' length first");
	ZSTD_DCtx *dctx = z->ZSTD_createDCtx();
	size_t m =
	    z->ZSTD_decompressDCtx(dctx, back, sizeof back, cur.p, (size_t)(body + n - cur.p));
	CHECK(m == sizeof records && !memcmp(back, records, m), "compressed body round trip");
	CHECK(gmt_chunk_compress(z, cctx, 1, body, (const uint8_t *)"123456789", 9) == 0,
	      "a body that compression does not shrink is stored plain (0)");
	z->ZSTD_freeDCtx(dctx);
	z->ZSTD_freeCCtx(cctx);
}

int main(void)
{
	static const uint64_t values[] = {
	    0,		1,	   127, 128, 300, 16383, 16384, 1ull << 32, (1ull << 63) - 1,
	    1ull << 63, UINT64_MAX};
	for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
		uint8_t buf[GMT_VARINT_MAX];
		uint8_t *end = gmt_put_varint(buf, values[i]);
		struct gmt_cursor c = {buf, end, 0};
		CHECK(gmt_get_varint(&c) == values[i] && !c.bad && c.p == end, "varint round trip");
		struct gmt_cursor shorter = {buf, end - 1, 0};
		gmt_get_varint(&shorter);
		CHECK(shorter.bad || end - buf == 1, "truncated varint is caught");
	}
	uint8_t b300[GMT_VARINT_MAX];
	CHECK(gmt_put_varint(b300, 300) - b300 == 2 && b300[0] == 0xac && b300[1] == 0x02,
	      "300 encodes as ac 02");
	static const int64_t signed_values[] = {0, -1, 1, -2, 2, INT64_MIN, INT64_MAX};
	static const uint64_t zz[] = {0, 1, 2, 3, 4, UINT64_MAX, UINT64_MAX - 1};
	for (size_t i = 0; i < 7; i++) {
		CHECK(gmt_zigzag(signed_values[i]) == zz[i], "zigzag value");
		CHECK(gmt_unzigzag(zz[i]) == signed_values[i], "unzigzag value");
	}
	uint8_t ten_more[11];
	memset(ten_more, 0x80, sizeof ten_more);
	struct gmt_cursor c = {ten_more, ten_more + sizeof ten_more, 0};
	gmt_get_varint(&c);
	CHECK(c.bad, "an 11-byte varint is rejected");
	uint8_t le[8];
	gmt_put_le64(le, 0x0102030405060708ull);
	CHECK(le[0] == 8 && le[7] == 1 && gmt_get_le64(le) == 0x0102030405060708ull, "le64");
	CHECK(gmt_crc32c(0, "123456789", 9) == 0xe3069283u, "crc32c check value");
	CHECK(gmt_crc32c(gmt_crc32c(0, "1234", 4), "56789", 5) == 0xe3069283u, "crc32c chaining");
	CHECK(gmt_crc32c_portable(0, "123456789", 9) == 0xe3069283u, "portable crc32c check value");
	/* The instruction and the tables agree at every length and alignment. */
	uint8_t buf[300];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	int same = 1;
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len + off <= sizeof buf; len += 13)
			same &=
			    gmt_crc32c(5, buf + off, len) == gmt_crc32c_portable(5, buf + off, len);
	CHECK(same, "crc32c: instruction and slicing-by-8 agree");
	chunk_frame();
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
