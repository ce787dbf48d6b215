/* Protocol buffers' wire format, written by hand (cli/pbuf.h). */
#include <stdlib.h>
#include <string.h>

#include "cli/pbuf.h"
#include "reader/xalloc.h"

void pb_put(struct pbuf *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (b->n + n > cap)
			cap *= 2;
		b->p = xrealloc(b->p, cap);
		b->cap = cap;
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

void pb_varint(struct pbuf *b, uint64_t v)
{
	uint8_t x[10];
	size_t n = 0;
	while (v >= 0x80) {
		x[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	x[n++] = (uint8_t)v;
	pb_put(b, x, n);
}

void pb_u(struct pbuf *b, int field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

void pb_bytes(struct pbuf *b, int field, const void *d, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_put(b, d, n);
}

void pb_str(struct pbuf *b, int field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

void pb_msg(struct pbuf *b, int field, const struct pbuf *m)
{
	pb_bytes(b, field, m->p, m->n);
}

void pb_free(struct pbuf *b)
{
	free(b->p);
	*b = (struct pbuf){0};
}
