/* Byte-level encoding shared by the trace writer and reader.
 *
 * varint: LEB128, 7 value bits per byte, low group first, high bit = more.
 *
 *     300 = 0b1_0010_1100  ->  1010_1100 0000_0010
 *                              ^ more     ^ last
 *
 * zigzag maps signed to unsigned so small magnitudes stay short:
 *     0 -> 0, -1 -> 1, 1 -> 2, -2 -> 3 ...   (v << 1) ^ (v >> 63)
 *
 * Fixed-width fields are little-endian, whatever the host. */
#ifndef GMT_CODEC_H
#define GMT_CODEC_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GMT_VARINT_MAX 10

static inline uint64_t gmt_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t gmt_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Writes at most GMT_VARINT_MAX bytes; returns the new end. */
static inline uint8_t *gmt_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Fixed-width little-endian fields, as one load or store each (a byte loop
 * was not merged by GCC 12 at -O2: 57 instructions per pointer written). */
static inline void gmt_put_le16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof v);
}

static inline void gmt_put_le32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof v);
}

static inline void gmt_put_le64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof v);
}

static inline uint16_t gmt_get_le16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof v);
	return le16toh(v);
}

static inline uint32_t gmt_get_le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return le32toh(v);
}

static inline uint64_t gmt_get_le64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return le64toh(v);
}

/* A bounds-checked read cursor. Any overrun sets `bad` and yields zeros, so
 * decoders check once per record instead of after every field. */
struct gmt_cursor {
	const uint8_t *p;
	const uint8_t *end;
	int bad;
};

static inline uint64_t gmt_get_varint(struct gmt_cursor *c)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (c->p >= c->end) {
			c->bad = 1;
			return 0;
		}
		uint8_t b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	c->bad = 1; /* more than 10 bytes: not a varint we wrote */
	return 0;
}

static inline int64_t gmt_get_zigzag(struct gmt_cursor *c)
{
	return gmt_unzigzag(gmt_get_varint(c));
}

/* A length-prefixed byte string; the result points into the buffer and is
 * not NUL-terminated. */
static inline const uint8_t *gmt_get_bytes(struct gmt_cursor *c, size_t *len)
{
	uint64_t n = gmt_get_varint(c);
	if (c->bad || n > (uint64_t)(c->end - c->p)) {
		c->bad = 1;
		*len = 0;
		return (const uint8_t *)"";
	}
	const uint8_t *s = c->p;
	c->p += n;
	*len = (size_t)n;
	return s;
}

/* CRC-32C; chain by passing the previous result as crc. */
uint32_t gmt_crc32c(uint32_t crc, const void *buf, size_t len);
/* The same without the SSE4.2 instruction, for tests and other CPUs. */
uint32_t gmt_crc32c_portable(uint32_t crc, const void *buf, size_t len);

#endif
