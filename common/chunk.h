/* One chunk's frame (docs/trace-format.md), written the same way by the
 * library's writer, the CLI's trace writer and the appender: a 16-byte
 * header (magic, body length, sequence number, CRC-32C of the body) before
 * the body, which is the records as they are or, compressed, the records'
 * length as a varint and one zstd frame. The callers own their buffers
 * (the library never calls malloc). */
#ifndef GMT_CHUNK_H
#define GMT_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/zstd.h"

/* The room a compressed body of n bytes of records may need. */
size_t gmt_chunk_zbound(const struct gmt_zstd *z, size_t n);

/* The n bytes of records at src compressed into body (room for
 * gmt_chunk_zbound(z, n)) at the given zstd level: the body's length, or 0
 * when compressing fails or saves nothing (the chunk is then stored
 * plain). */
size_t gmt_chunk_compress(const struct gmt_zstd *z, ZSTD_CCtx *cctx, int level, uint8_t *body,
			  const uint8_t *src, size_t n);

/* The header at c, before the len bytes of body at c + 16. */
void gmt_chunk_seal(uint8_t *c, bool compressed, uint32_t len, uint32_t seq);

#endif
