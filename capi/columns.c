/* Growable Arrow-layout columns: see columns.h. */
#include "capi/columns.h"

#include <stdlib.h>
#include <string.h>

#include "reader/hash.h"

#include "reader/xalloc.h"

struct dict_entry {
	UT_hash_handle hh;
	int32_t index;
	char key[]; /* NUL-terminated */
};

static size_t width(int type)
{
	switch (type) {
	case GMTR_I64:
	case GMTR_U64:
		return 8;
	case GMTR_I32:
	case GMTR_DICT:
		return 4;
	}
	return 0; /* GMTR_BOOL: bits */
}

static size_t bytes_for(int type, uint64_t rows)
{
	return type == GMTR_BOOL ? (size_t)((rows + 7) / 8) : (size_t)rows * width(type);
}

void col_reserve(struct col *c, uint64_t n)
{
	if (n <= c->cap)
		return;
	size_t old = bytes_for(c->type, c->cap), now = bytes_for(c->type, n);
	c->v = xrealloc(c->v, now ? now : 1);
	memset((char *)c->v + old, 0, now - old); /* bits start clear */
	if (c->valid) {
		size_t vold = bytes_for(GMTR_BOOL, c->cap), vnow = bytes_for(GMTR_BOOL, n);
		c->valid = xrealloc(c->valid, vnow);
		memset(c->valid + vold, 0, vnow - vold);
	}
	c->cap = n;
}

static void grow(struct col *c)
{
	if (c->n == c->cap)
		col_reserve(c, c->cap < 1024 ? 1024 : c->cap * 2);
}

static void set_valid(struct col *c)
{
	if (c->valid)
		c->valid[c->n / 8] |= (uint8_t)(1u << (c->n % 8));
}

void col_i64(struct col *c, int64_t v)
{
	grow(c);
	((int64_t *)c->v)[c->n] = v;
	set_valid(c);
	c->n++;
}

void col_u64(struct col *c, uint64_t v)
{
	grow(c);
	((uint64_t *)c->v)[c->n] = v;
	set_valid(c);
	c->n++;
}

void col_i32(struct col *c, int32_t v)
{
	grow(c);
	((int32_t *)c->v)[c->n] = v;
	set_valid(c);
	c->n++;
}

void col_bool(struct col *c, bool v)
{
	grow(c);
	if (v)
		((uint8_t *)c->v)[c->n / 8] |= (uint8_t)(1u << (c->n % 8));
	set_valid(c);
	c->n++;
}

void col_null(struct col *c)
{
	grow(c);
	if (!c->valid) { /* every row so far was valid */
		size_t len = bytes_for(GMTR_BOOL, c->cap);
		c->valid = xrealloc(NULL, len);
		memset(c->valid, 0, len);
		for (uint64_t i = 0; i < c->n; i++)
			c->valid[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	if (c->type != GMTR_BOOL) /* the value under a null is zero */
		memset((char *)c->v + (size_t)c->n * width(c->type), 0, width(c->type));
	c->nulls++;
	c->n++;
}

static int32_t dict_add(struct dict *d, const char *s)
{
	size_t len = strlen(s);
	struct dict_entry *e = NULL;
	HASH_FIND(hh, d->index, s, len, e);
	if (e)
		return e->index;
	if (d->n + 2 > d->cap) {
		d->cap = d->cap ? d->cap * 2 : 64;
		d->offsets = xrealloc(d->offsets, d->cap * sizeof(*d->offsets));
	}
	if (d->data_len + len + 1 > d->data_cap) {
		d->data_cap = (d->data_len + len + 1) * 2;
		d->data = xrealloc(d->data, d->data_cap);
	}
	if (d->n == 0)
		d->offsets[0] = 0;
	memcpy(d->data + d->data_len, s, len);
	d->data_len += len;
	d->offsets[d->n + 1] = (int32_t)d->data_len;
	e = xrealloc(NULL, sizeof(*e) + len + 1);
	memset(&e->hh, 0, sizeof(e->hh));
	memcpy(e->key, s, len + 1);
	e->index = (int32_t)d->n++;
	HASH_ADD(hh, d->index, key[0], len, e);
	return e->index;
}

void col_str(struct col *c, const char *s)
{
	if (!s)
		col_null(c);
	else
		col_i32(c, dict_add(&c->dict, s));
}

void col_str_stable(struct col *c, const char *s)
{
	if (s && s == c->last) {
		col_i32(c, c->last_index);
		return;
	}
	col_str(c, s);
	if (s) {
		c->last = s;
		c->last_index = ((int32_t *)c->v)[c->n - 1];
	}
}

void col_free(struct col *c)
{
	struct dict_entry *e, *tmp;
	HASH_ITER(hh, c->dict.index, e, tmp)
	{
		HASH_DEL(c->dict.index, e);
		free(e);
	}
	free(c->dict.offsets);
	free(c->dict.data);
	free(c->v);
	free(c->valid);
	memset(c, 0, sizeof(*c));
}

void col_view(const struct col *c, const char *name, struct gmtr_column *out)
{
	static const int32_t zero = 0;
	memset(out, 0, sizeof(*out));
	out->name = name;
	out->type = c->type;
	out->rows = c->n;
	out->values = c->v;
	out->valid = c->valid;
	out->nulls = c->nulls;
	if (c->type == GMTR_DICT) {
		out->dict_size = c->dict.n;
		out->dict_offsets = c->dict.n ? c->dict.offsets : &zero;
		out->dict_data = c->dict.data ? c->dict.data : "";
	}
}
