/* The restricted streaming unpickler (reader/pickle.h says what it takes
 * and why). Opcodes and their arguments are Python's Lib/pickletools.py
 * documentation of the format; nothing here comes from an unpickler's code.
 *
 * Pass 1 (scan) walks the opcodes: refusals, lengths, truncation, the memo's
 * numbering, and the set of memo indices ever fetched. Pass 2 (build) runs
 * the stack machine and keeps in the memo only that set. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/codec.h"
#include "reader/pickle.h"

/* ---- opcodes ---- */

enum {
	OP_MARK = 0x28,
	OP_STOP = 0x2e,
	OP_POP = 0x30,
	OP_POP_MARK = 0x31,
	OP_BININT = 0x4a,
	OP_BININT1 = 0x4b,
	OP_BININT2 = 0x4d,
	OP_NONE = 0x4e,
	OP_BINUNICODE = 0x58,
	OP_BINBYTES = 0x42,
	OP_SHORT_BINBYTES = 0x43,
	OP_BINFLOAT = 0x47,
	OP_EMPTY_LIST = 0x5d,
	OP_APPEND = 0x61,
	OP_DICT = 0x64,
	OP_APPENDS = 0x65,
	OP_BINGET = 0x68,
	OP_LONG_BINGET = 0x6a,
	OP_LIST = 0x6c,
	OP_BINPUT = 0x71,
	OP_LONG_BINPUT = 0x72,
	OP_SETITEM = 0x73,
	OP_TUPLE = 0x74,
	OP_EMPTY_TUPLE = 0x29,
	OP_SETITEMS = 0x75,
	OP_EMPTY_DICT = 0x7d,
	OP_PROTO = 0x80,
	OP_TUPLE1 = 0x85,
	OP_TUPLE2 = 0x86,
	OP_TUPLE3 = 0x87,
	OP_NEWTRUE = 0x88,
	OP_NEWFALSE = 0x89,
	OP_LONG1 = 0x8a,
	OP_LONG4 = 0x8b,
	OP_SHORT_BINUNICODE = 0x8c,
	OP_BINUNICODE8 = 0x8d,
	OP_BINBYTES8 = 0x8e,
	OP_MEMOIZE = 0x94,
	OP_FRAME = 0x95,
	OP_BYTEARRAY8 = 0x96,
};

/* The names of the opcodes we refuse, for the one line that says so. */
static const char *refused_name(int op)
{
	switch (op) {
	case 0x63:
		return "GLOBAL";
	case 0x93:
		return "STACK_GLOBAL";
	case 0x52:
		return "REDUCE";
	case 0x62:
		return "BUILD";
	case 0x69:
		return "INST";
	case 0x6f:
		return "OBJ";
	case 0x81:
		return "NEWOBJ";
	case 0x92:
		return "NEWOBJ_EX";
	case 0x50:
		return "PERSID";
	case 0x51:
		return "BINPERSID";
	case 0x82:
		return "EXT1";
	case 0x83:
		return "EXT2";
	case 0x84:
		return "EXT4";
	case 0x8f:
		return "EMPTY_SET";
	case 0x90:
		return "ADDITEMS";
	case 0x91:
		return "FROZENSET";
	case 0x97:
		return "NEXT_BUFFER";
	case 0x98:
		return "READONLY_BUFFER";
	case 0x32:
		return "DUP";
	case 0x46:
		return "FLOAT";
	case 0x49:
		return "INT";
	case 0x4c:
		return "LONG";
	case 0x53:
		return "STRING";
	case 0x54:
		return "BINSTRING";
	case 0x55:
		return "SHORT_BINSTRING";
	case 0x56:
		return "UNICODE";
	case 0x67:
		return "GET";
	case 0x70:
		return "PUT";
	default:
		return NULL;
	}
}

/* ---- errors ---- */

static enum pk_err fail(struct pk_error *err, enum pk_err code, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static enum pk_err fail(struct pk_error *err, enum pk_err code, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	err->code = code;
	err->offset = off;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return code;
}

/* ---- input: pread through a buffer ---- */

#define IN_BUF (1u << 20)

struct in {
	int fd;
	uint64_t size;
	uint64_t base; /* file offset of buf[0] */
	size_t len, at;
	uint8_t *buf;
	int errnum;
};

static uint64_t in_off(const struct in *in)
{
	return in->base + in->at;
}

/* Makes n bytes (n <= IN_BUF) readable at buf + at. 0, or -1 at the end
 * of the file (errnum 0) or on a read error (errnum set). */
static int in_need(struct in *in, size_t n)
{
	if (in->len - in->at >= n)
		return 0;
	memmove(in->buf, in->buf + in->at, in->len - in->at);
	in->base += in->at;
	in->len -= in->at;
	in->at = 0;
	while (in->len < n) {
		uint64_t off = in->base + in->len;
		if (off >= in->size)
			return -1;
		size_t want = IN_BUF - in->len;
		if (want > in->size - off)
			want = (size_t)(in->size - off);
		ssize_t got = pread(in->fd, in->buf + in->len, want, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			in->errnum = got < 0 ? errno : 0;
			return -1;
		}
		in->len += (size_t)got;
	}
	return 0;
}

/* Moves past n bytes (any n: the scan skips string bodies). */
static int in_skip(struct in *in, uint64_t n)
{
	if (n > in->size - in_off(in))
		return -1;
	if (in->len - in->at >= n) {
		in->at += (size_t)n;
		return 0;
	}
	in->base = in_off(in) + n;
	in->len = in->at = 0;
	return 0;
}

/* Copies n bytes out (any n that the caller may hold). */
static int in_copy(struct in *in, void *dst, size_t n)
{
	uint8_t *d = dst;
	while (n) {
		size_t chunk = n < IN_BUF ? n : IN_BUF;
		if (in_need(in, chunk))
			return -1;
		memcpy(d, in->buf + in->at, chunk);
		in->at += chunk;
		d += chunk;
		n -= chunk;
	}
	return 0;
}

/* ---- the memo's index set: open addressing, key idx + 1 (0: empty) ---- */

struct memo_slot {
	uint32_t key;
	struct pk_val v; /* PK_MARK_: not stored yet */
};

struct memo {
	struct memo_slot *s;
	size_t cap, n; /* cap: a power of two */
};

static size_t memo_hash(uint32_t key, size_t cap)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static struct memo_slot *memo_find(struct memo *m, uint32_t idx)
{
	if (!m->cap)
		return NULL;
	uint32_t key = idx + 1;
	for (size_t i = memo_hash(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->s[i].key == key)
			return &m->s[i];
		if (!m->s[i].key)
			return NULL;
	}
}

/* ---- the parse's state ---- */

struct pk {
	struct in in;
	pk_classify_fn classify;
	void *ctx;
	struct pk_error *err, err_store;
	uint64_t budget; /* bytes */
	int proto;
	uint64_t memo_count;
	struct memo memo;
	struct pk_val *st; /* the stack; marks are PK_MARK_ values */
	size_t sp, st_cap;
	size_t *marks; /* positions of the marks */
	size_t nmarks, marks_cap;
	uint64_t op_off;
	/* streamed items waiting for pk_next: [qhead, qn) */
	struct pk_item *q, cur;
	size_t qhead, qn, qcap;
	bool done, failed;
};

#define PK_LIMIT_MSG "more than %llu MiB held at once (GPUMEMTRACE_PICKLE_MAX_MB)"

/* What every pickle's values, stacks and memos hold in this process
 * (diff reads two), against the budget. Values outlive the parse that
 * made them when the consumer keeps them, so the count is not per parse. */
static uint64_t held;

static int charge(struct pk *p, uint64_t bytes)
{
	uint64_t now = __atomic_add_fetch(&held, bytes, __ATOMIC_RELAXED);
	if (now > p->budget || now < bytes) {
		__atomic_sub_fetch(&held, bytes, __ATOMIC_RELAXED);
		fail(p->err, PK_ERR_LIMIT, p->op_off, PK_LIMIT_MSG,
		     (unsigned long long)(p->budget >> 20));
		return -1;
	}
	return 0;
}

static uint64_t budget_from_env(void);

uint64_t pk_budget(void)
{
	return budget_from_env();
}

bool pk_budget_charge(uint64_t bytes)
{
	uint64_t now = __atomic_add_fetch(&held, bytes, __ATOMIC_RELAXED);
	if (now > budget_from_env() || now < bytes) {
		__atomic_sub_fetch(&held, bytes, __ATOMIC_RELAXED);
		return false;
	}
	return true;
}

void pk_budget_discharge(uint64_t bytes)
{
	__atomic_sub_fetch(&held, bytes, __ATOMIC_RELAXED);
}

static void discharge_bytes(uint64_t bytes)
{
	__atomic_sub_fetch(&held, bytes, __ATOMIC_RELAXED);
}

static void discharge(struct pk *p, uint64_t bytes)
{
	(void)p;
	discharge_bytes(bytes);
}

/* Grows an array of elem-sized items to hold n, charging the budget. */
static int grow_arr(struct pk *p, void **arr, size_t *cap, size_t n, size_t elem)
{
	if (n <= *cap)
		return 0;
	size_t want = *cap ? *cap * 2 : 8;
	while (want < n)
		want *= 2;
	if (charge(p, (uint64_t)(want - *cap) * elem))
		return -1;
	void *q = realloc(*arr, want * elem);
	if (!q) {
		discharge(p, (uint64_t)(want - *cap) * elem);
		fail(p->err, PK_ERR_NOMEM, p->op_off, "out of memory");
		return -1;
	}
	*arr = q;
	*cap = want;
	return 0;
}

/* ---- values ---- */

static uint64_t obj_bytes(const struct pk_obj *o)
{
	size_t body =
	    o->kind == PK_STR || o->kind == PK_BYTES ? o->cap : o->cap * sizeof(struct pk_val);
	return sizeof *o + body;
}

static void obj_free(struct pk_obj *o);

void pk_unref(struct pk_val *v)
{
	if (v->kind >= PK_STR && v->kind <= PK_DICT && v->o && --v->o->refs == 0)
		obj_free(v->o);
	v->kind = PK_NONE;
}

static void obj_free(struct pk_obj *o)
{
	if (o->kind != PK_STR && o->kind != PK_BYTES)
		for (size_t i = 0; i < o->n; i++)
			pk_unref(&o->v[i]);
	discharge_bytes(obj_bytes(o));
	free(o->s);
	free(o);
}

void pk_ref(const struct pk_val *v)
{
	if (v->kind >= PK_STR && v->kind <= PK_DICT && v->o)
		v->o->refs++;
}

void pk_obj_ref(struct pk_obj *o)
{
	o->refs++;
}

void pk_obj_unref(struct pk_obj *o)
{
	if (--o->refs == 0)
		obj_free(o);
}

static struct pk_obj *obj_new(struct pk *p, enum pk_kind kind, size_t cap)
{
	size_t body = kind == PK_STR || kind == PK_BYTES ? cap : cap * sizeof(struct pk_val);
	if (charge(p, sizeof(struct pk_obj) + body))
		return NULL;
	struct pk_obj *o = calloc(1, sizeof *o);
	void *b = body ? malloc(body) : NULL;
	if (!o || (body && !b)) {
		free(o);
		free(b);
		discharge(p, sizeof(struct pk_obj) + body);
		fail(p->err, PK_ERR_NOMEM, p->op_off, "out of memory");
		return NULL;
	}
	o->refs = 1;
	o->kind = (uint8_t)kind;
	o->cap = cap;
	o->s = b;
	return o;
}

static bool is_container(const struct pk_val *v)
{
	return v->kind == PK_LIST || v->kind == PK_TUPLE || v->kind == PK_DICT;
}

/* ---- the stack ---- */

static int push(struct pk *p, struct pk_val v)
{
	if (p->sp == p->st_cap &&
	    grow_arr(p, (void **)&p->st, &p->st_cap, p->sp + 1, sizeof *p->st)) {
		pk_unref(&v);
		return -1;
	}
	p->st[p->sp++] = v;
	return 0;
}

static int malformed(struct pk *p, const char *what)
{
	fail(p->err, PK_ERR_MALFORMED, p->op_off, "not valid pickle: %s", what);
	return -1;
}

/* The position of the last mark, or -1 (with the error) when none. */
static long last_mark(struct pk *p)
{
	if (!p->nmarks) {
		malformed(p, "no MARK for this opcode");
		return -1;
	}
	return (long)p->marks[p->nmarks - 1];
}

/* The top n values are values: no mark among them. */
static int need_values(struct pk *p, size_t n)
{
	if (p->sp < n || (p->nmarks && p->marks[p->nmarks - 1] >= p->sp - n))
		return malformed(p, "stack underflow");
	return 0;
}

/* ---- containers ---- */

/* Where a container made at stack position pos will go, as far as the
 * stack shows (Python's pickler: items between a MARK and APPENDS or
 * SETITEMS above their container; a lone item right above it for APPEND,
 * or a key and value for SETITEM). */
static uint32_t classify_at(struct pk *p, size_t pos, enum pk_kind kind)
{
	const struct pk_val *key = NULL;
	uint64_t index = 0;
	const struct pk_obj *parent = NULL;
	if (pos == 0)
		return p->classify(p->ctx, PK_CLS_ROOT, NULL, 0, kind);
	long m = -1;
	for (size_t i = p->nmarks; i-- > 0;)
		if (p->marks[i] < pos) {
			m = (long)p->marks[i];
			break;
		}
	if (m >= 1) {
		const struct pk_val *c = &p->st[m - 1];
		size_t count = pos - (size_t)m - 1;
		if (c->kind == PK_LIST && !c->o->sealed) {
			parent = c->o;
			index = (c->o->streamed ? c->o->items : c->o->n) + count;
		} else if (c->kind == PK_DICT && !c->o->sealed && (count & 1)) {
			parent = c->o;
			key = &p->st[pos - 1];
		}
	}
	if (!parent && pos >= 1 && p->st[pos - 1].kind == PK_LIST && !p->st[pos - 1].o->sealed) {
		parent = p->st[pos - 1].o;
		index = parent->streamed ? parent->items : parent->n;
	} else if (!parent && pos >= 2 && p->st[pos - 2].kind == PK_DICT &&
		   !p->st[pos - 2].o->sealed && p->st[pos - 1].kind != PK_MARK_) {
		parent = p->st[pos - 2].o;
		key = &p->st[pos - 1];
	}
	if (!parent)
		return p->classify(p->ctx, 0, NULL, 0, kind);
	return p->classify(p->ctx, parent->cls, key, index, kind);
}

static int new_container(struct pk *p, enum pk_kind kind)
{
	struct pk_obj *o = obj_new(p, kind, 0);
	if (!o)
		return -1;
	o->depth = 1;
	if (kind != PK_TUPLE) {
		o->cls = classify_at(p, p->sp, kind);
		o->streamed = (o->cls & PK_CLS_STREAM) != 0;
	}
	return push(p, (struct pk_val){.kind = (uint8_t)kind, .o = o});
}

/* A value goes into a container: it is sealed, and the depth checked. */
static int adopt(struct pk *p, struct pk_obj *parent, const struct pk_val *v)
{
	if (!is_container(v))
		return 0;
	v->o->sealed = 1;
	if (v->o->depth + 1 > PK_MAX_DEPTH) {
		fail(p->err, PK_ERR_LIMIT, p->op_off, "containers nested deeper than %d",
		     PK_MAX_DEPTH);
		return -1;
	}
	if (v->o->depth + 1 > parent->depth)
		parent->depth = (uint8_t)(v->o->depth + 1);
	return 0;
}

/* Adds n values (a dict: n/2 pairs) from st[from] on to container c, then
 * drops them from the stack. Streamed: each goes to ops->item instead. */
static int add_items(struct pk *p, struct pk_val *c, size_t from, size_t n)
{
	struct pk_obj *o = c->o;
	int rc = 0;
	if (o->sealed) {
		rc = malformed(p, "a container changed after it was shared (a cycle, or an "
				  "object used twice before it was whole)");
		goto drop;
	}
	for (size_t i = 0; i < n; i++)
		if (adopt(p, o, &p->st[from + i])) {
			rc = -1;
			goto drop;
		}
	if (o->streamed) { /* queued for pk_next, which the caller drains before the next opcode */
		size_t step = o->kind == PK_DICT ? 2 : 1;
		if (grow_arr(p, (void **)&p->q, &p->qcap, p->qn + n / step, sizeof *p->q)) {
			rc = -1;
			goto drop;
		}
		for (size_t i = 0; i + step <= n; i += step) {
			struct pk_item *it = &p->q[p->qn++];
			it->cls = o->cls & ~PK_CLS_STREAM;
			it->key = step == 2 ? p->st[from + i] : (struct pk_val){.kind = PK_NONE};
			it->index = o->items++;
			it->v = p->st[from + i + step - 1];
		}
		p->sp = from;
		return 0;
	}
	if (grow_arr(p, (void **)&o->v, &o->cap, o->n + n, sizeof *o->v)) {
		rc = -1;
		goto drop;
	}
	if (n) /* an empty APPENDS/SETITEMS: o->v may still be NULL */
		memcpy(o->v + o->n, p->st + from, n * sizeof *o->v);
	o->n += n;
	p->sp = from;
	return 0;
drop:
	while (p->sp > from)
		pk_unref(&p->st[--p->sp]);
	return rc;
}

/* TUPLE, TUPLE1-3, LIST, DICT: a container of the n values from st[from]. */
static int build(struct pk *p, enum pk_kind kind, size_t from, size_t n)
{
	struct pk_obj *o = obj_new(p, kind, 0);
	if (!o)
		return -1;
	o->depth = 1;
	struct pk_val c = {.kind = (uint8_t)kind, .o = o};
	if (kind != PK_TUPLE) {
		o->cls = classify_at(p, from, kind);
		o->streamed = (o->cls & PK_CLS_STREAM) != 0;
	}
	if (add_items(p, &c, from, n)) {
		pk_unref(&c);
		return -1;
	}
	return push(p, c);
}

/* ---- ints ---- */

/* A little-endian two's complement int of n bytes (LONG1, LONG4). */
static struct pk_val long_value(const uint8_t *b, size_t n)
{
	struct pk_val v = {.kind = PK_INT, .i = 0};
	if (n == 0)
		return v;
	int neg = b[n - 1] & 0x80;
	size_t sig = n; /* bytes that matter: drop redundant sign bytes */
	while (sig > 1 && b[sig - 1] == (neg ? 0xff : 0) &&
	       ((b[sig - 2] & 0x80) != 0) == (neg != 0))
		sig--;
	uint64_t u = 0;
	if (sig <= 8) {
		for (size_t i = 0; i < sig; i++)
			u |= (uint64_t)b[i] << (8 * i);
		if (neg && sig < 8)
			u |= ~0ull << (8 * sig);
		v.i = (int64_t)u;
		return v;
	}
	if (sig == 9 && !neg && b[8] == 0) { /* 2^63 .. 2^64-1 */
		for (size_t i = 0; i < 8; i++)
			u |= (uint64_t)b[i] << (8 * i);
		v.kind = PK_UINT;
		v.u = u;
		return v;
	}
	v.kind = PK_BIGINT;
	v.i = neg ? -1 : 1;
	return v;
}

/* ---- pass 1: the scan ---- */

static int memo_add_fetched(struct pk *p, uint32_t idx)
{
	struct memo *m = &p->memo;
	if (memo_find(m, idx))
		return 0;
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		if (charge(p, (uint64_t)cap * sizeof *m->s))
			return -1;
		struct memo_slot *s = calloc(cap, sizeof *s);
		if (!s) {
			fail(p->err, PK_ERR_NOMEM, p->op_off, "out of memory");
			return -1;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->s[i].key) {
				size_t j = memo_hash(m->s[i].key, cap);
				while (s[j].key)
					j = (j + 1) & (cap - 1);
				s[j] = m->s[i];
			}
		discharge(p, (uint64_t)m->cap * sizeof *m->s);
		free(m->s);
		m->s = s;
		m->cap = cap;
	}
	uint32_t key = idx + 1;
	size_t j = memo_hash(key, m->cap);
	while (m->s[j].key)
		j = (j + 1) & (m->cap - 1);
	m->s[j].key = key;
	m->s[j].v.kind = PK_MARK_;
	m->n++;
	return 0;
}

static int truncated(struct pk *p)
{
	if (p->in.errnum) {
		fail(p->err, PK_ERR_IO, in_off(&p->in), "read error: %s", strerror(p->in.errnum));
		return -1;
	}
	fail(p->err, PK_ERR_TRUNCATED, p->op_off,
	     "truncated pickle: the file ends at byte %llu, before the pickle's STOP",
	     (unsigned long long)p->in.size);
	return -1;
}

/* A memo index put: sequential (a new one) or an earlier one (replaced). */
static int memo_put_index(struct pk *p, uint64_t idx, uint32_t *out)
{
	if (idx > p->memo_count) {
		fail(p->err, PK_ERR_MALFORMED, p->op_off,
		     "not valid pickle: memo index %llu put out of sequence (next is %llu)",
		     (unsigned long long)idx, (unsigned long long)p->memo_count);
		return -1;
	}
	if (idx == p->memo_count) {
		if (p->memo_count == UINT32_MAX) {
			fail(p->err, PK_ERR_LIMIT, p->op_off, "more than 2^32 memo entries");
			return -1;
		}
		p->memo_count++;
	}
	*out = (uint32_t)idx;
	return 0;
}

static int memo_get_index(struct pk *p, uint64_t idx)
{
	if (idx >= p->memo_count) {
		fail(p->err, PK_ERR_MALFORMED, p->op_off,
		     "not valid pickle: memo index %llu out of range (%llu entries)",
		     (unsigned long long)idx, (unsigned long long)p->memo_count);
		return -1;
	}
	return 0;
}

/* The length of a length-prefixed argument: its prefix is lb bytes. */
static int arg_len(struct pk *p, int lb, uint64_t *len)
{
	if (in_need(&p->in, (size_t)lb))
		return truncated(p);
	const uint8_t *b = p->in.buf + p->in.at;
	*len = lb == 1 ? b[0] : lb == 4 ? gmt_get_le32(b) : gmt_get_le64(b);
	p->in.at += (size_t)lb;
	return 0;
}

static int string_len(struct pk *p, int lb, uint64_t *len)
{
	if (arg_len(p, lb, len))
		return -1;
	if (*len > PK_MAX_STRING) {
		fail(p->err, PK_ERR_LIMIT, p->op_off,
		     "a string or bytes of %llu bytes (at most %u)", (unsigned long long)*len,
		     PK_MAX_STRING);
		return -1;
	}
	if (*len > p->in.size - in_off(&p->in))
		return truncated(p);
	return 0;
}

static int refuse(struct pk *p, int op)
{
	const char *name = refused_name(op);
	if (name)
		fail(p->err, PK_ERR_REFUSED, p->op_off,
		     "refused pickle opcode %s (0x%02x): a memory snapshot holds only data "
		     "(dict, list, str, int, float); gpumemtrace never imports or calls code",
		     name, op);
	else
		fail(p->err, PK_ERR_MALFORMED, p->op_off, "not valid pickle: unknown opcode 0x%02x",
		     op);
	return -1;
}

/* Bytes of fixed argument after each opcode we take (-1: refused or unknown;
 * -2: length-prefixed or special, handled in the switch). */
static int fixed_arg(int op)
{
	switch (op) {
	case OP_MARK:
	case OP_STOP:
	case OP_POP:
	case OP_POP_MARK:
	case OP_NONE:
	case OP_EMPTY_LIST:
	case OP_APPEND:
	case OP_DICT:
	case OP_APPENDS:
	case OP_LIST:
	case OP_SETITEM:
	case OP_TUPLE:
	case OP_EMPTY_TUPLE:
	case OP_SETITEMS:
	case OP_EMPTY_DICT:
	case OP_TUPLE1:
	case OP_TUPLE2:
	case OP_TUPLE3:
	case OP_NEWTRUE:
	case OP_NEWFALSE:
	case OP_MEMOIZE:
		return 0;
	case OP_BININT1:
	case OP_PROTO:
		return 1;
	case OP_BININT2:
		return 2;
	case OP_BININT:
		return 4;
	case OP_BINFLOAT:
	case OP_FRAME:
		return 8;
	case OP_BINGET:
	case OP_BINPUT:
	case OP_LONG_BINGET:
	case OP_LONG_BINPUT:
	case OP_LONG1:
	case OP_LONG4:
	case OP_BINUNICODE:
	case OP_SHORT_BINUNICODE:
	case OP_BINUNICODE8:
	case OP_BINBYTES:
	case OP_SHORT_BINBYTES:
	case OP_BINBYTES8:
	case OP_BYTEARRAY8:
		return -2;
	default:
		return -1;
	}
}

/* Length-prefix width of a string, bytes or long opcode (0: not one). */
static int prefix_width(int op)
{
	switch (op) {
	case OP_SHORT_BINUNICODE:
	case OP_SHORT_BINBYTES:
	case OP_LONG1:
		return 1;
	case OP_BINUNICODE:
	case OP_BINBYTES:
	case OP_LONG4:
		return 4;
	case OP_BINUNICODE8:
	case OP_BINBYTES8:
	case OP_BYTEARRAY8:
		return 8;
	default:
		return 0;
	}
}

/* Reads the opcode at the cursor; PROTO must be the first. */
static int next_op(struct pk *p, int *op, bool first)
{
	p->op_off = in_off(&p->in);
	if (in_need(&p->in, 1))
		return truncated(p);
	*op = p->in.buf[p->in.at++];
	if (first && *op != OP_PROTO) {
		fail(p->err, PK_ERR_MALFORMED, p->op_off,
		     "not a pickle of protocol 2 or later (no PROTO opcode first)");
		return -1;
	}
	if (!first && *op == OP_PROTO) {
		fail(p->err, PK_ERR_MALFORMED, p->op_off, "not valid pickle: a second PROTO");
		return -1;
	}
	return 0;
}

static int scan(struct pk *p)
{
	for (bool first = true;; first = false) {
		int op, w;
		if (next_op(p, &op, first))
			return -1;
		int fixed = fixed_arg(op);
		if (fixed == -1)
			return refuse(p, op);
		if (op == OP_STOP)
			return 0;
		if (op == OP_PROTO) {
			if (in_need(&p->in, 1))
				return truncated(p);
			p->proto = p->in.buf[p->in.at++];
			if (p->proto < 2 || p->proto > 5) {
				fail(p->err, PK_ERR_REFUSED, p->op_off,
				     "pickle protocol %d: only protocols 2 to 5 (what "
				     "torch.cuda.memory._dump_snapshot writes) are read",
				     p->proto);
				return -1;
			}
			continue;
		}
		if (fixed >= 0) {
			if (in_need(&p->in, (size_t)fixed))
				return truncated(p);
			const uint8_t *b = p->in.buf + p->in.at;
			if (op == OP_FRAME && gmt_get_le64(b) > p->in.size - in_off(&p->in) - 8)
				return truncated(p);
			p->in.at += (size_t)fixed;
			if (op == OP_MEMOIZE) {
				uint32_t idx;
				if (memo_put_index(p, p->memo_count, &idx))
					return -1;
			}
			continue;
		}
		if ((w = prefix_width(op)) != 0) {
			uint64_t len;
			if (op == OP_LONG1 || op == OP_LONG4) {
				if (arg_len(p, w, &len))
					return -1;
				if (op == OP_LONG4 && (int32_t)len < 0)
					return malformed(p, "LONG4 with a negative length");
				if (len > p->in.size - in_off(&p->in))
					return truncated(p);
			} else if (string_len(p, w, &len)) {
				return -1;
			}
			if (in_skip(&p->in, len))
				return truncated(p);
			continue;
		}
		uint64_t idx;
		if (arg_len(p, op == OP_BINGET || op == OP_BINPUT ? 1 : 4, &idx))
			return -1;
		if (op == OP_BINGET || op == OP_LONG_BINGET) {
			if (memo_get_index(p, idx) || memo_add_fetched(p, (uint32_t)idx))
				return -1;
		} else {
			uint32_t put;
			if (memo_put_index(p, idx, &put))
				return -1;
		}
	}
}

/* ---- pass 2: the build ---- */

static int do_string(struct pk *p, int op)
{
	uint64_t len;
	if (string_len(p, prefix_width(op), &len))
		return -1;
	enum pk_kind kind = op == OP_SHORT_BINUNICODE || op == OP_BINUNICODE || op == OP_BINUNICODE8
				? PK_STR
				: PK_BYTES;
	struct pk_obj *o = obj_new(p, kind, (size_t)len + 1);
	if (!o)
		return -1;
	if (in_copy(&p->in, o->s, (size_t)len)) {
		struct pk_val v = {.kind = (uint8_t)kind, .o = o};
		pk_unref(&v);
		return truncated(p);
	}
	o->s[len] = 0;
	o->n = (size_t)len;
	o->sealed = 1;
	return push(p, (struct pk_val){.kind = (uint8_t)kind, .o = o});
}

static int do_long(struct pk *p, int op)
{
	uint64_t len;
	if (arg_len(p, op == OP_LONG1 ? 1 : 4, &len))
		return -1;
	if (len > p->in.size - in_off(&p->in))
		return truncated(p);
	if (len > 9) { /* beyond 64 bits: only its sign is kept */
		if (in_skip(&p->in, len - 1) || in_need(&p->in, 1))
			return truncated(p);
		struct pk_val v = {.kind = PK_BIGINT, .i = (p->in.buf[p->in.at] & 0x80) ? -1 : 1};
		p->in.at++;
		return push(p, v);
	}
	if (in_need(&p->in, (size_t)len))
		return truncated(p);
	struct pk_val v = long_value(p->in.buf + p->in.at, (size_t)len);
	p->in.at += (size_t)len;
	return push(p, v);
}

static int do_put(struct pk *p, uint64_t idx)
{
	uint32_t i;
	if (p->sp == 0 || p->st[p->sp - 1].kind == PK_MARK_)
		return malformed(p, "memo put with nothing on the stack");
	if (memo_put_index(p, idx, &i))
		return -1;
	struct memo_slot *s = memo_find(&p->memo, i);
	if (!s)
		return 0; /* never fetched: not kept */
	if (s->v.kind != PK_MARK_)
		pk_unref(&s->v);
	s->v = p->st[p->sp - 1];
	pk_ref(&s->v);
	return 0;
}

static int do_get(struct pk *p, uint64_t idx)
{
	if (memo_get_index(p, idx))
		return -1;
	struct memo_slot *s = memo_find(&p->memo, (uint32_t)idx);
	if (!s || s->v.kind == PK_MARK_)
		return malformed(p, "memo entry fetched before it was put (the file changed?)");
	if (is_container(&s->v))
		s->v.o->sealed = 1;
	pk_ref(&s->v);
	return push(p, s->v);
}

/* Pops the mark at the top of the marks (after its items were used). */
static void pop_mark(struct pk *p, size_t at)
{
	p->nmarks--;
	/* the items above it are gone; the mark itself sits at `at` */
	p->sp = at;
}

static int do_mark_op(struct pk *p, int op)
{
	long m = last_mark(p);
	if (m < 0)
		return -1;
	size_t from = (size_t)m + 1, n = p->sp - from;
	int rc = 0;
	switch (op) {
	case OP_APPENDS:
	case OP_SETITEMS:
		if (m == 0 || p->st[m - 1].kind != (op == OP_APPENDS ? PK_LIST : PK_DICT))
			return malformed(p, op == OP_APPENDS ? "APPENDS to something not a list"
							     : "SETITEMS on something not a dict");
		if (op == OP_SETITEMS && (n & 1))
			return malformed(p, "SETITEMS with a key and no value");
		rc = add_items(p, &p->st[m - 1], from, n);
		pop_mark(p, (size_t)m);
		return rc;
	case OP_POP_MARK:
		while (p->sp > from)
			pk_unref(&p->st[--p->sp]);
		pop_mark(p, (size_t)m);
		return 0;
	default: { /* TUPLE, LIST, DICT: the items become a container where the mark was */
		if (op == OP_DICT && (n & 1))
			return malformed(p, "DICT with a key and no value");
		enum pk_kind kind = op == OP_TUPLE ? PK_TUPLE : op == OP_LIST ? PK_LIST : PK_DICT;
		/* move the items down over the mark, then build from there */
		memmove(&p->st[m], &p->st[from], n * sizeof *p->st);
		p->sp--;
		p->nmarks--;
		return build(p, kind, (size_t)m, n);
	}
	}
}

static int do_single(struct pk *p, int op)
{
	switch (op) {
	case OP_APPEND:
		if (need_values(p, 2) || p->st[p->sp - 2].kind != PK_LIST)
			return p->err->code ? -1 : malformed(p, "APPEND to something not a list");
		return add_items(p, &p->st[p->sp - 2], p->sp - 1, 1);
	case OP_SETITEM:
		if (need_values(p, 3) || p->st[p->sp - 3].kind != PK_DICT)
			return p->err->code ? -1 : malformed(p, "SETITEM on something not a dict");
		return add_items(p, &p->st[p->sp - 3], p->sp - 2, 2);
	case OP_TUPLE1:
	case OP_TUPLE2:
	case OP_TUPLE3: {
		size_t n = (size_t)(op - OP_TUPLE1 + 1);
		if (need_values(p, n))
			return -1;
		return build(p, PK_TUPLE, p->sp - n, n);
	}
	case OP_POP:
		if (!p->sp)
			return malformed(p, "POP of an empty stack");
		if (p->st[p->sp - 1].kind == PK_MARK_) {
			p->nmarks--;
			p->sp--;
		} else {
			pk_unref(&p->st[--p->sp]);
		}
		return 0;
	default:
		return malformed(p, "unexpected opcode");
	}
}

static int do_int(struct pk *p, int op)
{
	size_t w = op == OP_BININT1 ? 1 : op == OP_BININT2 ? 2 : 4;
	if (in_need(&p->in, w))
		return truncated(p);
	const uint8_t *b = p->in.buf + p->in.at;
	p->in.at += w;
	int64_t v = w == 1 ? b[0] : w == 2 ? (int64_t)gmt_get_le16(b) : (int32_t)gmt_get_le32(b);
	return push(p, (struct pk_val){.kind = PK_INT, .i = v});
}

static int do_float(struct pk *p)
{
	if (in_need(&p->in, 8))
		return truncated(p);
	uint64_t u = 0;
	for (int i = 0; i < 8; i++) /* big-endian */
		u = u << 8 | p->in.buf[p->in.at + i];
	p->in.at += 8;
	struct pk_val v = {.kind = PK_FLOAT};
	memcpy(&v.f, &u, sizeof v.f);
	return push(p, v);
}

static int do_memo(struct pk *p, int op)
{
	uint64_t idx;
	if (op == OP_MEMOIZE)
		return do_put(p, p->memo_count);
	if (arg_len(p, op == OP_BINGET || op == OP_BINPUT ? 1 : 4, &idx))
		return -1;
	return op == OP_BINPUT || op == OP_LONG_BINPUT ? do_put(p, idx) : do_get(p, idx);
}

static int step(struct pk *p, int op)
{
	switch (op) {
	case OP_PROTO:
		return in_need(&p->in, 1) ? truncated(p) : (p->in.at++, 0);
	case OP_FRAME:
		return in_need(&p->in, 8) ? truncated(p) : (p->in.at += 8, 0);
	case OP_MARK:
		if (p->nmarks == p->marks_cap &&
		    grow_arr(p, (void **)&p->marks, &p->marks_cap, p->nmarks + 1, sizeof *p->marks))
			return -1;
		p->marks[p->nmarks++] = p->sp;
		return push(p, (struct pk_val){.kind = PK_MARK_});
	case OP_NONE:
		return push(p, (struct pk_val){.kind = PK_NONE});
	case OP_NEWTRUE:
	case OP_NEWFALSE:
		return push(p, (struct pk_val){.kind = PK_BOOL, .i = op == OP_NEWTRUE});
	case OP_BININT:
	case OP_BININT1:
	case OP_BININT2:
		return do_int(p, op);
	case OP_LONG1:
	case OP_LONG4:
		return do_long(p, op);
	case OP_BINFLOAT:
		return do_float(p);
	case OP_SHORT_BINUNICODE:
	case OP_BINUNICODE:
	case OP_BINUNICODE8:
	case OP_SHORT_BINBYTES:
	case OP_BINBYTES:
	case OP_BINBYTES8:
	case OP_BYTEARRAY8:
		return do_string(p, op);
	case OP_EMPTY_LIST:
		return new_container(p, PK_LIST);
	case OP_EMPTY_DICT:
		return new_container(p, PK_DICT);
	case OP_EMPTY_TUPLE:
		return build(p, PK_TUPLE, p->sp, 0);
	case OP_APPENDS:
	case OP_SETITEMS:
	case OP_POP_MARK:
	case OP_TUPLE:
	case OP_LIST:
	case OP_DICT:
		return do_mark_op(p, op);
	case OP_MEMOIZE:
	case OP_BINPUT:
	case OP_LONG_BINPUT:
	case OP_BINGET:
	case OP_LONG_BINGET:
		return do_memo(p, op);
	default:
		return do_single(p, op);
	}
}

/* Runs opcodes until items are queued or STOP: 1, 0 at STOP, -1. */
static int run(struct pk *p)
{
	while (p->qn == 0) {
		int op;
		if (next_op(p, &op, p->in.base + p->in.at == 0))
			return -1;
		if (op == OP_STOP) {
			if (p->sp != 1 || p->nmarks)
				return malformed(p, "STOP with other than one value on the stack");
			return 0;
		}
		if (step(p, op))
			return -1;
	}
	return 1;
}

/* ---- the API ---- */

bool pk_sniff(const uint8_t *b, size_t n)
{
	return n >= 2 && b[0] == OP_PROTO && b[1] >= 2; /* a later protocol: refused by name */
}

static uint64_t budget_from_env(void)
{
	static uint64_t cached;
	if (cached)
		return cached;
	const char *e = getenv("GPUMEMTRACE_PICKLE_MAX_MB");
	char *end;
	unsigned long long mb = 2048;
	if (e && *e) {
		errno = 0;
		unsigned long long v = strtoull(e, &end, 10);
		if (!errno && !*end && v >= 1 && v <= (1ull << 30))
			mb = v;
		else
			fprintf(stderr,
				"gpumemtrace: GPUMEMTRACE_PICKLE_MAX_MB=%s is not a number of MiB "
				"from 1 "
				"to 2^30; using %llu\n",
				e, mb);
	}
	return cached = mb << 20;
}

static void reset_in(struct pk *p)
{
	p->in.base = 0;
	p->in.len = p->in.at = 0;
	p->in.errnum = 0;
}

static void drop_queue(struct pk *p)
{
	pk_unref(&p->cur.key);
	pk_unref(&p->cur.v);
	for (size_t i = p->qhead; i < p->qn; i++) {
		pk_unref(&p->q[i].key);
		pk_unref(&p->q[i].v);
	}
	p->qhead = p->qn = 0;
}

/* Empties the stack and the kept memo values: what a pass built. */
static void drop_built(struct pk *p)
{
	drop_queue(p);
	while (p->sp)
		pk_unref(&p->st[--p->sp]);
	p->nmarks = 0;
	for (size_t i = 0; i < p->memo.cap; i++)
		if (p->memo.s[i].key && p->memo.s[i].v.kind != PK_MARK_) {
			pk_unref(&p->memo.s[i].v);
			p->memo.s[i].v.kind = PK_MARK_;
		}
}

struct pk *pk_open(int fd, uint64_t size, pk_classify_fn classify, void *ctx, struct pk_error *err)
{
	memset(err, 0, sizeof *err);
	struct pk *p = calloc(1, sizeof *p);
	uint8_t *buf = malloc(IN_BUF);
	if (!p || !buf) {
		free(p);
		free(buf);
		fail(err, PK_ERR_NOMEM, 0, "out of memory");
		return NULL;
	}
	p->in = (struct in){.fd = fd, .size = size, .buf = buf};
	p->classify = classify;
	p->ctx = ctx;
	p->err = &p->err_store;
	p->budget = budget_from_env();
	if (scan(p)) {
		*err = *p->err;
		pk_close(p);
		return NULL;
	}
	pk_rewind(p);
	return p;
}

void pk_rewind(struct pk *p)
{
	drop_built(p);
	reset_in(p);
	p->memo_count = 0;
	p->done = p->failed = false;
	memset(p->err, 0, sizeof *p->err);
}

int pk_next(struct pk *p, const struct pk_item **out)
{
	pk_unref(&p->cur.key);
	pk_unref(&p->cur.v);
	int rc = 1;
	if (p->qhead == p->qn) {
		p->qhead = p->qn = 0;
		rc = p->done ? 0 : p->failed ? -1 : run(p);
		if (rc <= 0) {
			p->done = rc == 0;
			p->failed = rc < 0;
		}
	}
	if (rc > 0) {
		p->cur = p->q[p->qhead++];
		*out = &p->cur;
	}
	return rc;
}

const struct pk_error *pk_error(const struct pk *p)
{
	return p->err;
}

uint64_t pk_offset(const struct pk *p)
{
	return p->op_off;
}

int pk_protocol(const struct pk *p)
{
	return p->proto;
}

void pk_close(struct pk *p)
{
	if (!p)
		return;
	drop_built(p);
	discharge(p, (uint64_t)p->memo.cap * sizeof *p->memo.s + p->st_cap * sizeof *p->st +
			 p->marks_cap * sizeof *p->marks + p->qcap * sizeof *p->q);
	free(p->memo.s);
	free(p->st);
	free(p->marks);
	free(p->q);
	free(p->in.buf);
	free(p);
}

/* ---- reading values ---- */

size_t pk_len(const struct pk_val *v)
{
	if (v->kind != PK_LIST && v->kind != PK_TUPLE && v->kind != PK_DICT)
		return 0;
	return v->o->n;
}

const struct pk_val *pk_item(const struct pk_val *v, size_t i)
{
	return i < pk_len(v) ? &v->o->v[i] : NULL;
}

const struct pk_val *pk_get(const struct pk_val *d, const char *key)
{
	if (d->kind != PK_DICT)
		return NULL;
	size_t klen = strlen(key);
	for (size_t i = d->o->n; i >= 2; i -= 2) {
		const struct pk_val *k = &d->o->v[i - 2];
		if (k->kind == PK_STR && k->o->n == klen && !memcmp(k->o->s, key, klen))
			return &d->o->v[i - 1];
	}
	return NULL;
}

bool pk_u64(const struct pk_val *v, uint64_t *out)
{
	if ((v->kind == PK_INT || v->kind == PK_BOOL) && v->i >= 0) {
		*out = (uint64_t)v->i;
		return true;
	}
	if (v->kind == PK_UINT) {
		*out = v->u;
		return true;
	}
	return false;
}

bool pk_i64(const struct pk_val *v, int64_t *out)
{
	if (v->kind == PK_INT || v->kind == PK_BOOL) {
		*out = v->i;
		return true;
	}
	return false;
}

bool pk_num(const struct pk_val *v, double *out)
{
	switch (v->kind) {
	case PK_INT:
	case PK_BOOL:
		*out = (double)v->i;
		return true;
	case PK_UINT:
		*out = (double)v->u;
		return true;
	case PK_FLOAT:
		*out = v->f;
		return true;
	default:
		return false;
	}
}

const char *pk_str(const struct pk_val *v, size_t *len)
{
	if (v->kind != PK_STR)
		return NULL;
	if (len)
		*len = v->o->n;
	return v->o->s;
}

bool pk_str_is(const struct pk_val *v, const char *s)
{
	size_t n = strlen(s);
	return v->kind == PK_STR && v->o->n == n && !memcmp(v->o->s, s, n);
}

static size_t text_at(const struct pk_val *v, char *buf, size_t size, int depth);

static size_t items_text(const struct pk_val *v, char *buf, size_t size, int depth)
{
	size_t n = 0;
	bool dict = v->kind == PK_DICT;
	for (size_t i = 0; i < pk_len(v) && n + 1 < size; i += dict ? 2 : 1) {
		if (i)
			n += (size_t)snprintf(buf + n, size - n, ",");
		n += text_at(pk_item(v, i), buf + n, size - n, depth + 1);
		if (dict && n + 1 < size) {
			n += (size_t)snprintf(buf + n, size - n, ":");
			n += text_at(pk_item(v, i + 1), buf + n, size - n, depth + 1);
		}
	}
	return n;
}

static size_t text_at(const struct pk_val *v, char *buf, size_t size, int depth)
{
	int n = 0;
	if (size == 0)
		return 0;
	switch (v->kind) {
	case PK_NONE:
		n = snprintf(buf, size, "None");
		break;
	case PK_BOOL:
		n = snprintf(buf, size, "%s", v->i ? "True" : "False");
		break;
	case PK_INT:
		n = snprintf(buf, size, "%lld", (long long)v->i);
		break;
	case PK_UINT:
		n = snprintf(buf, size, "%llu", (unsigned long long)v->u);
		break;
	case PK_FLOAT: /* Python's str: a whole number keeps its ".0" */
		n = snprintf(buf, size, "%.15g", v->f);
		if (n > 0 && (size_t)n + 2 < size && !strpbrk(buf, ".einI"))
			n += snprintf(buf + n, size - (size_t)n, ".0");
		break;
	case PK_STR:
		n = snprintf(buf, size, "%s", v->o->s);
		break;
	case PK_LIST:
	case PK_TUPLE:
	case PK_DICT:
		if (depth < 4)
			return items_text(v, buf, size, depth);
		n = snprintf(buf, size, "...");
		break;
	default:
		n = snprintf(buf, size, "?");
	}
	return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

const char *pk_text(const struct pk_val *v, char *buf, size_t size)
{
	if (size)
		buf[0] = 0;
	text_at(v, buf, size, 0);
	return buf;
}

const char *pk_kind_name(enum pk_kind k)
{
	static const char *const names[] = {"None", "bool",  "int",  "int",   "int", "float",
					    "str",  "bytes", "list", "tuple", "dict"};
	return (size_t)k < sizeof names / sizeof *names ? names[k] : "?";
}
