/* varint, zigzag, little-endian fields and CRC-32C against known values. */
#include <stdio.h>
#include <string.h>

#include "common/codec.h"
#include "check.h"

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
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
