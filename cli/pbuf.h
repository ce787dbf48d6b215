/* Protocol buffers written by hand, for the exports (pprof's profile.proto,
 * Perfetto's TracePacket): a growing byte buffer and the wire format's
 * varint and length-delimited fields. */
#ifndef GMT_CLI_PBUF_H
#define GMT_CLI_PBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pbuf {
	uint8_t *p;
	size_t n, cap;
};

void pb_put(struct pbuf *b, const void *d, size_t n);
void pb_varint(struct pbuf *b, uint64_t v);
/* A varint field (wire type 0): uint64, int64 (two's complement), bool, enum. */
void pb_u(struct pbuf *b, int field, uint64_t v);
/* A length-delimited field (wire type 2): bytes, a string, a message. */
void pb_bytes(struct pbuf *b, int field, const void *d, size_t n);
void pb_str(struct pbuf *b, int field, const char *s);
/* A message field whose body is m (m is left as it was). */
void pb_msg(struct pbuf *b, int field, const struct pbuf *m);
void pb_free(struct pbuf *b);

#endif
