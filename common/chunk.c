/* One chunk's frame: see chunk.h. */
#include "common/chunk.h"

#include "common/codec.h"
#include "gpumemtrace/format.h"

size_t gmt_chunk_zbound(const struct gmt_zstd *z, size_t n)
{
	return GMT_VARINT_MAX + z->ZSTD_compressBound(n);
}

size_t gmt_chunk_compress(const struct gmt_zstd *z, ZSTD_CCtx *cctx, int level, uint8_t *body,
			  const uint8_t *src, size_t n)
{
	uint8_t *p = gmt_put_varint(body, n);
	size_t head = (size_t)(p - body);
	size_t z_len = z->ZSTD_compressCCtx(cctx, p, gmt_chunk_zbound(z, n) - head, src, n, level);
	if (z->ZSTD_isError(z_len) || head + z_len >= n)
		return 0;
	return head + z_len;
}

void gmt_chunk_seal(uint8_t *c, bool compressed, uint32_t len, uint32_t seq)
{
	gmt_put_le32(c, compressed ? GMT_CHUNK_MAGIC_ZSTD : GMT_CHUNK_MAGIC);
	gmt_put_le32(c + 4, len);
	gmt_put_le32(c + 8, seq);
	gmt_put_le32(c + 12, gmt_crc32c(0, c + GMT_CHUNK_HEADER_SIZE, len));
}
