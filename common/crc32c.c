/* CRC-32C (Castagnoli): the SSE4.2 crc32 instruction where the CPU has it
 * (checked once with cpuid), else slicing-by-8 over tables built on first
 * use. The tables are built before any thread can race on them: the writer
 * calls gmt_crc32c once while creating the trace file, under the setup
 * lock; racing builders would write equal values anyway. */
#include "common/codec.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

static uint32_t crc_table[8][256];
static int crc_table_ready;

static void crc_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & -(c & 1));
		crc_table[0][i] = c;
	}
	for (int t = 1; t < 8; t++)
		for (uint32_t i = 0; i < 256; i++)
			crc_table[t][i] =
			    (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
	/* Pairs with the acquire load in gmt_crc32c_portable. */
	__atomic_store_n(&crc_table_ready, 1, __ATOMIC_RELEASE);
}

uint32_t gmt_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
	if (!__atomic_load_n(&crc_table_ready, __ATOMIC_ACQUIRE))
		crc_table_init();
	const uint8_t *p = buf;
	crc = ~crc;
	for (; len >= 8; p += 8, len -= 8) {
		uint32_t lo = crc ^ gmt_get_le32(p), hi = gmt_get_le32(p + 4);
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
	}
	while (len--)
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const void *buf,
							       size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = ~crc;
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
	}
	uint32_t c32 = (uint32_t)c;
	while (len--)
		c32 = _mm_crc32_u8(c32, *p++);
	return ~c32;
}

static int have_sse42(void)
{
	static int known; /* 0 unknown, 1 no, 2 yes: racing callers agree */
	int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (!k) {
		unsigned a, b, c, d;
		k = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) ? 2 : 1;
		__atomic_store_n(&known, k, __ATOMIC_RELAXED);
	}
	return k == 2;
}
#endif

uint32_t gmt_crc32c(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
	if (have_sse42())
		return crc32c_sse42(crc, buf, len);
#endif
	return gmt_crc32c_portable(crc, buf, len);
}
