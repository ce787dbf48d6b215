/* PyTorch's caching allocator as a pure model (model/torchalloc.h says
 * which rules, and where they come from). Free blocks live in treaps
 * ordered as PyTorch's std::sets are; every block is also in a hash by
 * address, for frees and for following a recorded history. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/torchalloc.h"

enum { SMALL = 0, LARGE = 1 };

struct xseg;

struct blk {
	uint64_t ptr, size, requested, stream;
	int64_t counter;  /* the segment's registration counter (its age) */
	uint64_t gc_base; /* the pool's get_free_blocks count when it came back */
	uint8_t pool;	  /* SMALL or LARGE */
	bool allocated, pending, mapped, in_tree;
	struct xseg *xs;	 /* its expandable segment, or NULL */
	struct blk *prev, *next; /* neighbours in its segment */
	struct blk *l, *r;	 /* treap */
	uint32_t prio;
	struct blk *hnext; /* hash chain */
};

struct xseg {
	uint64_t base, size, page, stream;
	uint8_t pool;
	struct xseg *next;
};

struct pool {
	struct blk *blocks;   /* free mapped blocks: (stream, size, age, ptr) */
	struct blk *unmapped; /* expandable segments' unmapped ranges: (stream, ptr) */
	uint64_t get_free_blocks_call_count;
};

struct ta {
	struct ta_config c;
	struct ta_backend b;
	struct pool pools[2];
	struct blk **hash;
	size_t nhash, nblocks;
	int64_t counter;
	uint32_t rng;
	struct xseg *xsegs;
	uint64_t *seg_base; /* regular segments' bases, sorted: for lookups by address */
	size_t nsegs, segs_cap;
	struct ta_stats st;
	bool failed; /* out of memory inside the model */
};

/* ---- configuration ---- */

void ta_config_default(struct ta_config *c)
{
	memset(c, 0, sizeof *c);
	c->max_split_size = TA_NO_MAX_SPLIT;
	c->max_non_split_rounding = TA_LARGE_BUFFER;
	c->large_segment_size = TA_LARGE_BUFFER;
	c->order = TA_ORDER_AGE;
}

static int log2_floor(uint64_t v)
{
	return 63 - __builtin_clzll(v);
}

/* "N", or "[64:8,256:4,>:1]": divisions per interval, keyed by the MiB of
 * the interval's start (AllocatorConfig.cpp, parseRoundUpPower2Divisions). */
static int parse_roundup(struct ta_config *c, const char *v, size_t len, char *err, size_t es)
{
	char buf[256];
	if (len >= sizeof buf) {
		snprintf(err, es, "roundup_power2_divisions: value too long");
		return -1;
	}
	memcpy(buf, v, len);
	buf[len] = 0;
	if (buf[0] != '[') {
		char *end;
		unsigned long n = strtoul(buf, &end, 10);
		if (*end || end == buf || (n && (n & (n - 1)))) {
			snprintf(err, es, "roundup_power2_divisions: '%s' is not a power of 2",
				 buf);
			return -1;
		}
		for (int i = 0; i < TA_ROUNDUP_ENTRIES; i++)
			c->roundup[i] = (uint32_t)n;
		return 0;
	}
	int last = -1;
	char *save = NULL;
	size_t bl = strlen(buf);
	if (buf[bl - 1] != ']') {
		snprintf(err, es, "roundup_power2_divisions: '%s' lacks its ']'", buf);
		return -1;
	}
	buf[bl - 1] = 0;
	for (char *tok = strtok_r(buf + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':'), *end;
		if (!colon) {
			snprintf(err, es, "roundup_power2_divisions: '%s' is not SIZE_MB:N", tok);
			return -1;
		}
		*colon = 0;
		unsigned long n = strtoul(colon + 1, &end, 10);
		if (*end || (n && (n & (n - 1)))) {
			snprintf(err, es, "roundup_power2_divisions: '%s' is not a power of 2",
				 colon + 1);
			return -1;
		}
		int idx;
		if (!strcmp(tok, ">")) {
			idx = TA_ROUNDUP_ENTRIES - 1;
		} else {
			unsigned long mb = strtoul(tok, &end, 10);
			if (*end || !mb || (mb & (mb - 1))) {
				snprintf(err, es,
					 "roundup_power2_divisions: '%s' is not a power of 2", tok);
				return -1;
			}
			idx = log2_floor(mb);
			if (idx >= TA_ROUNDUP_ENTRIES)
				idx = TA_ROUNDUP_ENTRIES - 1;
		}
		for (int i = last + 1; i <= idx; i++)
			c->roundup[i] = (uint32_t)n;
		if (idx > last)
			last = idx;
	}
	return 0;
}

static bool is_true(const char *v, size_t len, bool *out)
{
	if (len == 4 && !memcmp(v, "True", 4))
		return *out = true;
	if (len == 5 && !memcmp(v, "False", 5))
		return !(*out = false);
	return false;
}

static int parse_mb(const char *key, const char *v, size_t len, uint64_t *out, char *err, size_t es)
{
	char buf[32], *end;
	if (len == 0 || len >= sizeof buf)
		goto bad;
	memcpy(buf, v, len);
	buf[len] = 0;
	unsigned long long mb = strtoull(buf, &end, 10);
	if (*end || mb > (UINT64_MAX >> 20))
		goto bad;
	*out = mb << 20;
	return 0;
bad:
	snprintf(err, es, "%s: '%.*s' is not a number of MiB", key, (int)len, v);
	return -1;
}

/* One "key:value" of conf from p (a value in [...] may hold commas): key
 * and value set, and where the next one starts; NULL at the end. A key
 * without ':' leaves v NULL. */
static const char *conf_item(const char *p, const char **k, size_t *klen, const char **v,
			     size_t *vlen)
{
	while (*p == ' ' || *p == ',')
		p++;
	if (!*p)
		return NULL;
	const char *colon = strchr(p, ':');
	*k = p;
	if (!colon) {
		*v = NULL;
		return p + strlen(p);
	}
	const char *e = colon + 1;
	if (*e == '[') {
		const char *close = strchr(e, ']');
		e = close ? close + 1 : e + strlen(e);
	} else {
		while (*e && *e != ',')
			e++;
	}
	*klen = (size_t)(colon - p);
	*v = colon + 1;
	*vlen = (size_t)(e - *v);
	return e;
}

int ta_config_parse(struct ta_config *c, const char *conf, char *err, size_t es)
{
	const char *p = conf, *next, *v;
	size_t klen, vlen;
	while ((next = conf_item(p, &p, &klen, &v, &vlen))) {
		if (!v) {
			snprintf(err, es, "'%s' is not key:value", p);
			return -1;
		}
#define KEY(s) (klen == strlen(s) && !memcmp(p, s, klen))
		if (KEY("max_split_size_mb")) {
			uint64_t b;
			if (parse_mb("max_split_size_mb", v, vlen, &b, err, es))
				return -1;
			if (b <= TA_LARGE_BUFFER) {
				snprintf(err, es, "max_split_size_mb must be more than 20");
				return -1;
			}
			c->max_split_size = b;
		} else if (KEY("max_non_split_rounding_mb")) {
			if (parse_mb("max_non_split_rounding_mb", v, vlen,
				     &c->max_non_split_rounding, err, es))
				return -1;
		} else if (KEY("large_segment_size_mb")) {
			if (parse_mb("large_segment_size_mb", v, vlen, &c->large_segment_size, err,
				     es))
				return -1;
		} else if (KEY("roundup_power2_divisions")) {
			if (parse_roundup(c, v, vlen, err, es))
				return -1;
		} else if (KEY("expandable_segments")) {
			if (!is_true(v, vlen, &c->expandable_segments)) {
				snprintf(err, es,
					 "expandable_segments: '%.*s' is not True or False",
					 (int)vlen, v);
				return -1;
			}
		} else if (KEY("garbage_collection_threshold")) {
			char buf[32], *end;
			double t = vlen && vlen < sizeof buf
				       ? (memcpy(buf, v, vlen), buf[vlen] = 0, strtod(buf, &end))
				       : 0;
			if (!vlen || vlen >= sizeof buf || *end || !(t > 0 && t < 1)) {
				snprintf(
				    err, es,
				    "garbage_collection_threshold: '%.*s' is not between 0 and "
				    "1",
				    (int)vlen, v);
				return -1;
			}
			c->gc_threshold = t;
		}
#undef KEY
		p = next;
	}
	return 0;
}

/* The keys of PyTorch's allocator settings (c10/cuda/CUDAAllocatorConfig
 * and c10/core/AllocatorConfig across versions, with the ROCm spellings):
 * a key outside them is a typo, which PyTorch refuses. */
static const char *const ta_known_keys[] = {
    "max_split_size_mb",
    "max_non_split_rounding_mb",
    "garbage_collection_threshold",
    "roundup_power2_divisions",
    "expandable_segments",
    "large_segment_size_mb",
    "backend",
    "release_lock_on_cudamalloc",
    "release_lock_on_hipmalloc",
    "pinned_use_cuda_host_register",
    "pinned_use_hip_host_register",
    "pinned_num_register_threads",
    "pinned_use_background_threads",
    "pinned_reserve_segment_size_mb",
    "graph_capture_record_stream_reuse",
    "per_process_memory_fraction",
};

bool ta_config_unknown_key(const char *conf, char *key, size_t keysize)
{
	const char *p = conf, *k, *v;
	size_t klen, vlen;
	/* an item without ':' is ta_config_parse's error to report */
	for (; (p = conf_item(p, &k, &klen, &v, &vlen)) && v;) {
		bool known = false;
		for (size_t i = 0; i < sizeof ta_known_keys / sizeof *ta_known_keys; i++)
			known |=
			    strlen(ta_known_keys[i]) == klen && !memcmp(ta_known_keys[i], k, klen);
		if (!known) {
			snprintf(key, keysize, "%.*s", (int)klen, k);
			return true;
		}
	}
	return false;
}

const char *ta_config_text(const struct ta_config *c, char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = 0;
#define ADD(...)                                                                                   \
	do {                                                                                       \
		if (n < size)                                                                      \
			n += (size_t)snprintf(buf + n, size - n, "%s", n ? "," : "");              \
		if (n < size)                                                                      \
			n += (size_t)snprintf(buf + n, size - n, __VA_ARGS__);                     \
	} while (0)
	if (c->expandable_segments)
		ADD("expandable_segments:True");
	if (c->max_split_size != TA_NO_MAX_SPLIT)
		ADD("max_split_size_mb:%llu", (unsigned long long)(c->max_split_size >> 20));
	bool any = false, same = true;
	for (int i = 0; i < TA_ROUNDUP_ENTRIES; i++) {
		any |= c->roundup[i] > 1;
		same &= c->roundup[i] == c->roundup[0];
	}
	if (any && same)
		ADD("roundup_power2_divisions:%u", c->roundup[0]);
	else if (any)
		ADD("roundup_power2_divisions:[per interval]");
	if (c->gc_threshold > 0)
		ADD("garbage_collection_threshold:%g", c->gc_threshold);
	if (c->large_segment_size != TA_LARGE_BUFFER)
		ADD("large_segment_size_mb:%llu",
		    (unsigned long long)(c->large_segment_size >> 20));
#undef ADD
	if (!n)
		snprintf(buf, size, "(defaults)");
	return buf;
}

/* ---- sizes ---- */

static uint64_t next_division(uint64_t size, uint32_t divisions)
{
	if (!(size & (size - 1)))
		return size;
	uint64_t floor2 = 1ull << log2_floor(size);
	uint64_t division = floor2 >> log2_floor(divisions);
	if (!division)
		return floor2 << 1;
	uint64_t rounded = size & ~(division - 1);
	return rounded == size ? size : rounded + division;
}

uint64_t ta_round_size(const struct ta_config *c, uint64_t size)
{
	if (size < TA_MIN_BLOCK)
		return TA_MIN_BLOCK;
	int idx = log2_floor(size) - 20;
	idx = idx < 0 ? 0 : idx > TA_ROUNDUP_ENTRIES - 1 ? TA_ROUNDUP_ENTRIES - 1 : idx;
	uint32_t d = c->roundup[idx];
	if (d > 1 && size > TA_MIN_BLOCK * d)
		return next_division(size, d);
	if (size > UINT64_MAX - TA_MIN_BLOCK)
		return size;
	return (size + TA_MIN_BLOCK - 1) / TA_MIN_BLOCK * TA_MIN_BLOCK;
}

uint64_t ta_allocation_size(const struct ta_config *c, uint64_t size)
{
	if (size <= TA_SMALL_SIZE)
		return TA_SMALL_BUFFER;
	if (size < TA_MIN_LARGE_ALLOC)
		return c->large_segment_size;
	if (size > UINT64_MAX - TA_ROUND_LARGE)
		return size;
	return (size + TA_ROUND_LARGE - 1) / TA_ROUND_LARGE * TA_ROUND_LARGE;
}

/* ---- the hash of every block by address ---- */

static size_t hslot(const struct ta *a, uint64_t ptr)
{
	uint64_t x = ptr * 0x9e3779b97f4a7c15ull;
	return (size_t)(x >> 20) & (a->nhash - 1);
}

static bool hgrow(struct ta *a)
{
	size_t n = a->nhash ? 2 * a->nhash : 1024;
	struct blk **h = calloc(n, sizeof *h);
	if (!h)
		return false;
	for (size_t i = 0; i < a->nhash; i++)
		for (struct blk *b = a->hash[i], *next; b; b = next) {
			next = b->hnext;
			size_t s = (size_t)((b->ptr * 0x9e3779b97f4a7c15ull) >> 20) & (n - 1);
			b->hnext = h[s];
			h[s] = b;
		}
	free(a->hash);
	a->hash = h;
	a->nhash = n;
	return true;
}

static void hadd(struct ta *a, struct blk *b)
{
	if (a->nblocks + 1 > a->nhash && !hgrow(a)) {
		a->failed = true;
		return;
	}
	size_t s = hslot(a, b->ptr);
	b->hnext = a->hash[s];
	a->hash[s] = b;
	a->nblocks++;
}

static void hdel(struct ta *a, struct blk *b)
{
	for (struct blk **p = &a->hash[hslot(a, b->ptr)]; *p; p = &(*p)->hnext)
		if (*p == b) {
			*p = b->hnext;
			a->nblocks--;
			return;
		}
}

static struct blk *hfind(const struct ta *a, uint64_t ptr)
{
	if (!a->nhash)
		return NULL;
	for (struct blk *b = a->hash[hslot(a, ptr)]; b; b = b->hnext)
		if (b->ptr == ptr)
			return b;
	return NULL;
}

static void set_ptr(struct ta *a, struct blk *b, uint64_t ptr)
{
	hdel(a, b);
	b->ptr = ptr;
	hadd(a, b);
}

/* ---- the regular segments' bases, sorted ---- */

static size_t seg_index(const struct ta *a, uint64_t base)
{
	size_t lo = 0, hi = a->nsegs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (a->seg_base[mid] < base)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void seg_add(struct ta *a, uint64_t base)
{
	if (a->nsegs == a->segs_cap) {
		size_t cap = a->segs_cap ? 2 * a->segs_cap : 64;
		uint64_t *v = realloc(a->seg_base, cap * sizeof *v);
		if (!v) {
			a->failed = true;
			return;
		}
		a->seg_base = v;
		a->segs_cap = cap;
	}
	size_t i = seg_index(a, base);
	memmove(a->seg_base + i + 1, a->seg_base + i, (a->nsegs - i) * sizeof *a->seg_base);
	a->seg_base[i] = base;
	a->nsegs++;
}

static void seg_del(struct ta *a, uint64_t base)
{
	size_t i = seg_index(a, base);
	if (i < a->nsegs && a->seg_base[i] == base) {
		memmove(a->seg_base + i, a->seg_base + i + 1,
			(a->nsegs - i - 1) * sizeof *a->seg_base);
		a->nsegs--;
	}
}

/* ---- treaps ---- */

struct key {
	uint64_t stream, size;
	int64_t counter;
	uint64_t ptr;
};

static struct key key_of(const struct ta *a, const struct blk *b)
{
	return (struct key){b->stream, b->size, a->c.order == TA_ORDER_AGE ? b->counter : 0,
			    b->ptr};
}

/* BlockComparatorSizeCounterAddress; for the unmapped set, size and
 * counter are 0 (BlockComparatorAddress). */
static int kcmp(const struct key *x, const struct key *y)
{
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	if (x->counter != y->counter)
		return x->counter < y->counter ? -1 : 1;
	if (x->ptr != y->ptr)
		return x->ptr < y->ptr ? -1 : 1;
	return 0;
}

static struct key tkey(const struct ta *a, const struct blk *b, bool unmapped)
{
	if (unmapped)
		return (struct key){b->stream, 0, 0, b->ptr};
	return key_of(a, b);
}

static struct blk *rot_right(struct blk *t)
{
	struct blk *l = t->l;
	t->l = l->r;
	l->r = t;
	return l;
}

static struct blk *rot_left(struct blk *t)
{
	struct blk *r = t->r;
	t->r = r->l;
	r->l = t;
	return r;
}

static struct blk *tinsert(const struct ta *a, struct blk *t, struct blk *b, bool unmapped)
{
	if (!t)
		return b;
	struct key kb = tkey(a, b, unmapped), kt = tkey(a, t, unmapped);
	if (kcmp(&kb, &kt) < 0) {
		t->l = tinsert(a, t->l, b, unmapped);
		if (t->l->prio > t->prio)
			t = rot_right(t);
	} else {
		t->r = tinsert(a, t->r, b, unmapped);
		if (t->r->prio > t->prio)
			t = rot_left(t);
	}
	return t;
}

static struct blk *tmerge(struct blk *x, struct blk *y)
{
	if (!x)
		return y;
	if (!y)
		return x;
	if (x->prio > y->prio) {
		x->r = tmerge(x->r, y);
		return x;
	}
	y->l = tmerge(x, y->l);
	return y;
}

static struct blk *terase(const struct ta *a, struct blk *t, const struct blk *b, bool unmapped)
{
	if (!t)
		return NULL;
	if (t == b)
		return tmerge(t->l, t->r);
	struct key kb = tkey(a, b, unmapped), kt = tkey(a, t, unmapped);
	if (kcmp(&kb, &kt) < 0)
		t->l = terase(a, t->l, b, unmapped);
	else
		t->r = terase(a, t->r, b, unmapped);
	return t;
}

/* The first node >= k (or > k with strict). */
static struct blk *tlower(const struct ta *a, struct blk *t, const struct key *k, bool unmapped,
			  bool strict)
{
	struct blk *best = NULL;
	while (t) {
		struct key kt = tkey(a, t, unmapped);
		int c = kcmp(&kt, k);
		if (c > 0 || (c == 0 && !strict)) {
			best = t;
			t = t->l;
		} else {
			t = t->r;
		}
	}
	return best;
}

/* The last node < k. */
static struct blk *tpred(const struct ta *a, struct blk *t, const struct key *k, bool unmapped)
{
	struct blk *best = NULL;
	while (t) {
		struct key kt = tkey(a, t, unmapped);
		if (kcmp(&kt, k) < 0) {
			best = t;
			t = t->r;
		} else {
			t = t->l;
		}
	}
	return best;
}

static struct blk *tnext(const struct ta *a, struct blk *root, const struct blk *b, bool unmapped)
{
	struct key k = tkey(a, b, unmapped);
	return tlower(a, root, &k, unmapped, true);
}

static size_t tcount(const struct blk *t)
{
	return t ? 1 + tcount(t->l) + tcount(t->r) : 0;
}

static void tcollect(struct blk *t, struct blk **out, size_t *n)
{
	if (!t)
		return;
	tcollect(t->l, out, n);
	out[(*n)++] = t;
	tcollect(t->r, out, n);
}

/* ---- blocks ---- */

static struct blk *blk_new(struct ta *a, uint64_t ptr, uint64_t size, uint64_t stream, int pool)
{
	struct blk *b = calloc(1, sizeof *b);
	if (!b) {
		a->failed = true;
		return NULL;
	}
	b->ptr = ptr;
	b->size = size;
	b->stream = stream;
	b->pool = (uint8_t)pool;
	b->mapped = true;
	a->rng = a->rng * 1664525u + 1013904223u; /* deterministic priorities */
	b->prio = a->rng;
	hadd(a, b);
	return b;
}

static void blk_delete(struct ta *a, struct blk *b)
{
	hdel(a, b);
	free(b);
}

static void pool_insert(struct ta *a, struct blk *b)
{
	struct pool *p = &a->pools[b->pool];
	b->l = b->r = NULL;
	b->gc_base = p->get_free_blocks_call_count;
	p->blocks = tinsert(a, p->blocks, b, false);
	b->in_tree = true;
}

static void pool_erase(struct ta *a, struct blk *b)
{
	struct pool *p = &a->pools[b->pool];
	if (!b->in_tree)
		return;
	p->blocks = terase(a, p->blocks, b, false);
	b->in_tree = false;
	b->l = b->r = NULL;
}

static void unmapped_insert(struct ta *a, struct blk *b)
{
	struct pool *p = &a->pools[b->pool];
	b->l = b->r = NULL;
	p->unmapped = tinsert(a, p->unmapped, b, true);
	b->in_tree = true;
}

static void unmapped_erase(struct ta *a, struct blk *b)
{
	struct pool *p = &a->pools[b->pool];
	if (!b->in_tree)
		return;
	p->unmapped = terase(a, p->unmapped, b, true);
	b->in_tree = false;
	b->l = b->r = NULL;
}

static bool is_split(const struct blk *b)
{
	return b->prev || b->next;
}

static void trace(struct ta *a, enum ta_action act, uint64_t addr, uint64_t size, uint64_t stream)
{
	if (a->b.trace)
		a->b.trace(a->b.ctx, act, addr, size, stream);
}

static void reserved_add(struct ta *a, int64_t bytes)
{
	a->st.reserved += (uint64_t)bytes;
	if (a->st.reserved > a->st.max_reserved)
		a->st.max_reserved = a->st.reserved;
}

/* try_merge_blocks: src into dst when src is free and alike. */
static uint64_t try_merge(struct ta *a, struct blk *dst, struct blk *src)
{
	if (!src || src->allocated || src->pending || dst->mapped != src->mapped)
		return 0;
	if (dst->prev == src) { /* [src dst] */
		set_ptr(a, dst, src->ptr);
		dst->prev = src->prev;
		if (dst->prev)
			dst->prev->next = dst;
	} else { /* [dst src] */
		dst->next = src->next;
		if (dst->next)
			dst->next->prev = dst;
	}
	uint64_t sub = src->size;
	dst->size += sub;
	if (src->mapped)
		pool_erase(a, src);
	else
		unmapped_erase(a, src);
	blk_delete(a, src);
	return sub;
}

/* ---- finding a block ---- */

struct params {
	uint64_t size, alloc_size, stream;
	int pool;
	bool expandable;
	struct blk *block;
	bool rejected;
};

static bool gc_on(const struct ta *a)
{
	return a->c.allowed_max && a->c.gc_threshold > 0;
}

static uint64_t expandable_size(const struct blk *b)
{
	return b->size + (b->next && !b->next->mapped ? b->next->size : 0);
}

/* get_free_block: best fit on the stream, with the oversize rules. With
 * count false (ta_choose) the pool's counter is left alone and nothing
 * is taken. */
static bool get_free_block(struct ta *a, struct params *p, bool take)
{
	struct pool *pool = &a->pools[p->pool];
	if (take && gc_on(a))
		pool->get_free_blocks_call_count++;
	struct key k = {p->stream, p->size, INT64_MIN, 0};
	struct blk *it = tlower(a, pool->blocks, &k, false, false);
	if (!it || it->stream != p->stream)
		return false;
	if (it->xs) {
		if (p->expandable) {
			/* best fit by the size it can grow to */
			struct blk *next = tnext(a, pool->blocks, it, false);
			while (it->xs && next && next->stream == p->stream &&
			       expandable_size(next) < expandable_size(it)) {
				it = next;
				next = tnext(a, pool->blocks, it, false);
			}
		} else {
			do
				it = tnext(a, pool->blocks, it, false);
			while (it && it->xs && it->stream == p->stream);
			if (!it || it->stream != p->stream)
				return false;
		}
	}
	uint64_t ms = a->c.max_split_size;
	if (p->size < ms && it->size >= ms)
		return false;
	if (p->size >= ms && it->size >= p->size + a->c.max_non_split_rounding)
		return false;
	p->block = it;
	if (take)
		pool_erase(a, it);
	return true;
}

static bool should_split(const struct ta *a, const struct blk *b, uint64_t size, bool expandable)
{
	uint64_t remaining = b->size - size;
	if (b->pool == SMALL || expandable)
		return remaining >= TA_MIN_BLOCK;
	return size < a->c.max_split_size && remaining > TA_SMALL_SIZE;
}

/* ---- releasing memory ---- */

static void release_block(struct ta *a, struct blk *b)
{
	a->st.num_device_free++;
	trace(a, TA_SEGMENT_FREE, b->ptr, b->size, b->stream);
	if (a->b.free)
		a->b.free(a->b.ctx, b->ptr, b->size);
	reserved_add(a, -(int64_t)b->size);
	a->st.segments--;
	seg_del(a, b->ptr);
	pool_erase(a, b);
	blk_delete(a, b);
}

static uint64_t seg_left(const struct xseg *x, uint64_t p)
{
	return (p - x->base) / x->page;
}

static uint64_t seg_right(const struct xseg *x, uint64_t p)
{
	return (p - x->base + x->page - 1) / x->page;
}

static void unmap_block(struct ta *a, struct blk *b)
{
	struct xseg *x = b->xs;
	uint64_t begin = seg_right(x, b->ptr), end = seg_left(x, b->ptr + b->size);
	if (begin >= end)
		return;
	uint64_t uptr = x->base + begin * x->page, usize = (end - begin) * x->page;
	if (a->b.unmap)
		a->b.unmap(a->b.ctx, uptr, x->page, end - begin);
	pool_erase(a, b);
	uint64_t before = uptr - b->ptr, after = b->size - before - usize;
	/* a mapped range is cut in two, shortened, or gone */
	a->st.mapped_ranges += (uint64_t)((before || (b->prev && b->prev->mapped)) +
					  (after || (b->next && b->next->mapped))) -
			       1;
	if (before) { /* prev? -> before_free -> b */
		struct blk *f = blk_new(a, b->ptr, before, b->stream, b->pool);
		if (!f)
			return;
		f->xs = x;
		f->counter = b->counter;
		f->prev = b->prev;
		if (b->prev)
			b->prev->next = f;
		f->next = b;
		b->prev = f;
		set_ptr(a, b, uptr);
		pool_insert(a, f);
	}
	if (after) { /* b -> after_free -> next? */
		struct blk *f = blk_new(a, uptr + usize, after, b->stream, b->pool);
		if (!f)
			return;
		f->xs = x;
		f->counter = b->counter;
		f->next = b->next;
		if (b->next)
			b->next->prev = f;
		f->prev = b;
		b->next = f;
		pool_insert(a, f);
	}
	if (b->ptr != uptr)
		set_ptr(a, b, uptr);
	b->size = usize;
	b->mapped = false;
	try_merge(a, b, b->prev);
	try_merge(a, b, b->next);
	unmapped_insert(a, b);
	reserved_add(a, -(int64_t)usize);
	a->st.num_device_free++;
	trace(a, TA_SEGMENT_UNMAP, uptr, usize, b->stream);
}

static void release_expandable_segment(struct ta *a, struct blk *b)
{
	struct xseg *x = b->xs;
	for (struct xseg **p = &a->xsegs; *p; p = &(*p)->next)
		if (*p == x) {
			*p = x->next;
			break;
		}
	if (a->b.release)
		a->b.release(a->b.ctx, x->base, x->size);
	unmapped_erase(a, b);
	blk_delete(a, b);
	free(x);
}

/* release_blocks: every unsplit cached segment of the pool; expandable
 * segments' free pages unmapped (and a wholly unmapped segment freed). */
static void release_blocks(struct ta *a, int pool)
{
	struct pool *p = &a->pools[pool];
	size_t n = tcount(p->blocks), k = 0;
	if (!n)
		return;
	struct blk **v = malloc(n * sizeof *v);
	if (!v) {
		a->failed = true;
		return;
	}
	tcollect(p->blocks, v, &k);
	size_t nx = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i]->xs)
			v[nx++] = v[i]; /* unmapped after the loop */
		else if (!is_split(v[i]))
			release_block(a, v[i]);
	}
	for (size_t i = 0; i < nx; i++) {
		struct blk *b = v[i];
		unmap_block(a, b);
		if (!b->mapped && !is_split(b))
			release_expandable_segment(a, b);
	}
	free(v);
}

/* synchronize_and_free_events: pending frees complete first. */
static void complete_pending(struct ta *a)
{
	for (size_t i = 0; i < a->nhash; i++)
		for (struct blk *b = a->hash[i], *next; b; b = next) {
			next = b->hnext;
			if (b->pending)
				ta_free_completed(a, b->ptr);
		}
}

static void release_cached_blocks(struct ta *a)
{
	complete_pending(a);
	release_blocks(a, LARGE);
	release_blocks(a, SMALL);
}

void ta_empty_cache(struct ta *a)
{
	release_cached_blocks(a);
}

/* release_available_cached_blocks: with max_split_size set, oversize
 * cached blocks, the smallest that covers the request or the largest
 * ones until they do. */
static bool release_available(struct ta *a, const struct params *p)
{
	uint64_t ms = a->c.max_split_size;
	if (ms == TA_NO_MAX_SPLIT)
		return false;
	struct pool *pool = &a->pools[p->pool];
	struct key k = {p->stream, p->size < ms ? ms : p->size, INT64_MIN, 0};
	struct blk *it = tlower(a, pool->blocks, &k, false, false);
	if (it && it->stream == p->stream && !it->xs) {
		release_block(a, it);
		return true;
	}
	/* no single block: the largest oversize ones on the stream */
	it = it ? tpred(a, pool->blocks, &(struct key){it->stream, it->size, it->counter, it->ptr},
			false)
		: tpred(a, pool->blocks,
			&(struct key){UINT64_MAX, UINT64_MAX, INT64_MAX, UINT64_MAX}, false);
	uint64_t released = 0;
	while (it && released < k.size && it->size >= ms && it->stream == p->stream) {
		struct blk *cur = it;
		struct key ck = key_of(a, cur);
		it = tpred(a, pool->blocks, &ck, false);
		if (!cur->xs) {
			released += cur->size;
			release_block(a, cur);
		}
	}
	return released >= k.size;
}

/* garbage_collect_cached_blocks: unsplit large cached blocks at least as
 * old (in get_free_block calls) as the average, until the pool is back
 * under the threshold of the memory fraction. */
static void garbage_collect(struct ta *a)
{
	uint64_t thr = (uint64_t)(a->c.gc_threshold * (double)a->c.allowed_max);
	if (a->st.reserved <= thr)
		return;
	uint64_t target = a->st.reserved - thr, reclaimed = 0;
	struct pool *pool = &a->pools[LARGE];
	uint64_t total_age = 0;
	long count = 0;
	size_t n = tcount(pool->blocks), k = 0;
	struct blk **v = n ? malloc(n * sizeof *v) : NULL;
	if (n && !v) {
		a->failed = true;
		return;
	}
	tcollect(pool->blocks, v, &k);
	for (size_t i = 0; i < n; i++)
		if (!is_split(v[i])) {
			total_age += pool->get_free_blocks_call_count - v[i]->gc_base;
			count++;
		}
	bool freed = true;
	while (reclaimed < target && freed && count > 0) {
		double thr_age = (double)total_age / (double)count;
		freed = false;
		k = 0;
		n = tcount(pool->blocks);
		tcollect(pool->blocks, v, &k);
		for (size_t i = 0; i < n; i++) {
			struct blk *b = v[i];
			uint64_t age = pool->get_free_blocks_call_count - b->gc_base;
			if (!is_split(b) && !b->xs && (double)age >= thr_age) {
				freed = true;
				reclaimed += b->size;
				total_age -= age;
				count--;
				release_block(a, b);
			}
		}
	}
	free(v);
}

/* ---- expandable segments ---- */

static bool allocatable(const struct blk *b)
{
	return b && !b->allocated && !b->pending;
}

static bool has_room(const struct blk *b, uint64_t size)
{
	uint64_t bytes = 0;
	while (bytes < size && allocatable(b)) {
		bytes += b->size;
		b = b->next;
	}
	return bytes >= size;
}

static uint64_t device_total(const struct ta *a)
{
	return a->c.device_total ? a->c.device_total : 80ull << 30;
}

/* A new expandable segment: its whole reservation, one unmapped block.
 * At `va` when the caller knows it (replay), else from the backend. */
static struct blk *new_xseg(struct ta *a, uint64_t stream, int pool, bool have_va, uint64_t va,
			    uint64_t max_bytes)
{
	uint64_t page = pool == SMALL ? TA_SMALL_BUFFER : a->c.large_segment_size;
	uint64_t total = device_total(a);
	uint64_t pages = (total + total / 8 + page - 1) / page;
	if (max_bytes && pages * page > max_bytes)
		pages = max_bytes / page; /* a recorded reservation ends where the next begins */
	if (!pages)
		return NULL;
	if (!have_va && (!a->b.reserve || a->b.reserve(a->b.ctx, pages * page, &va)))
		return NULL;
	struct xseg *x = calloc(1, sizeof *x);
	struct blk *b = x ? blk_new(a, va, pages * page, stream, pool) : NULL;
	if (!b) {
		free(x);
		a->failed = true;
		return NULL;
	}
	*x = (struct xseg){va, pages * page, page, stream, (uint8_t)pool, a->xsegs};
	a->xsegs = x;
	b->xs = x;
	b->mapped = false;
	b->counter = ++a->counter;
	unmapped_insert(a, b);
	return b;
}

/* find_expandable_block: the lowest unmapped range (with a free block just
 * before it) that can hold size, else a new segment. */
static struct blk *find_expandable(struct ta *a, uint64_t stream, int pool, uint64_t size)
{
	struct pool *p = &a->pools[pool];
	struct key k = {stream, 0, 0, 0};
	for (struct blk *it = tlower(a, p->unmapped, &k, true, false); it && it->stream == stream;
	     it = tnext(a, p->unmapped, it, true)) {
		struct blk *c = it;
		if (allocatable(c->prev))
			c = c->prev;
		if (has_room(c, size))
			return c;
	}
	struct blk *b = new_xseg(a, stream, pool, false, 0, 0);
	if (b && b->size < size) {
		release_expandable_segment(a, b);
		return NULL;
	}
	return b;
}

/* map_block: pages for [to_map, to_map + size) mapped, the rest of the
 * unmapped range left after it; merged with free neighbours. */
static bool map_block(struct ta *a, struct blk *m, uint64_t size)
{
	struct xseg *x = m->xs;
	uint64_t begin = seg_left(x, m->ptr), end = seg_right(x, m->ptr + size);
	uint64_t msize = (end - begin) * x->page;
	if (end > begin && a->b.map && a->b.map(a->b.ctx, m->ptr, x->page, end - begin))
		return false;
	unmapped_erase(a, m);
	/* a new range, one grown, or two joined */
	a->st.mapped_ranges += 1 - (uint64_t)(m->prev && m->prev->mapped) -
			       (uint64_t)(msize == m->size && m->next && m->next->mapped);
	m->mapped = true;
	if (msize < m->size) {
		struct blk *rest = blk_new(a, m->ptr + msize, m->size - msize, m->stream, m->pool);
		if (!rest)
			return false;
		rest->mapped = false;
		rest->xs = x;
		rest->counter = m->counter;
		rest->prev = m;
		rest->next = m->next;
		if (m->next)
			m->next->prev = rest;
		m->next = rest;
		unmapped_insert(a, rest);
		m->size = msize;
	}
	uint64_t mptr = m->ptr;
	try_merge(a, m, m->prev);
	try_merge(a, m, m->next);
	pool_insert(a, m);
	reserved_add(a, (int64_t)msize);
	a->st.num_device_alloc++;
	trace(a, TA_SEGMENT_MAP, mptr, msize, m->stream);
	return true;
}

static struct blk *alloc_expandable(struct ta *a, uint64_t stream, int pool, uint64_t size)
{
	struct blk *c = find_expandable(a, stream, pool, size);
	if (!c)
		return NULL;
	if (!c->mapped && !map_block(a, c, c->size < size ? c->size : size))
		return NULL;
	while (c->size < size) { /* free -> unmapped -> ...: map the next and merge */
		struct blk *nc = c->next;
		uint64_t rem = size - c->size;
		if (!map_block(a, nc, rem < nc->size ? rem : nc->size))
			return NULL;
		c = nc;
	}
	pool_erase(a, c);
	return c;
}

/* ---- malloc ---- */

static bool alloc_block(struct ta *a, struct params *p, bool retry)
{
	if (retry)
		a->st.num_alloc_retries++;
	if (a->c.allowed_max && a->st.reserved + p->alloc_size > a->c.allowed_max)
		return false;
	if (p->expandable) {
		p->block = alloc_expandable(a, p->stream, p->pool, p->size);
		return p->block != NULL;
	}
	uint64_t ptr;
	if (!a->b.malloc || a->b.malloc(a->b.ctx, p->alloc_size, &ptr))
		return false;
	struct blk *b = blk_new(a, ptr, p->alloc_size, p->stream, p->pool);
	if (!b)
		return false;
	b->counter = ++a->counter;
	seg_add(a, ptr);
	reserved_add(a, (int64_t)p->alloc_size);
	a->st.segments++;
	if (a->st.segments > a->st.max_segments)
		a->st.max_segments = a->st.segments;
	a->st.num_device_alloc++;
	trace(a, TA_SEGMENT_ALLOC, ptr, p->alloc_size, p->stream);
	p->block = b;
	return true;
}

/* alloc_found_block: the block at the front of p->block, split off when
 * the rules say, handed out. */
static struct blk *alloc_found(struct ta *a, struct blk *blk, uint64_t size, uint64_t orig,
			       bool split)
{
	struct blk *b = blk;
	if (split) {
		struct blk *rest = blk;
		b = blk_new(a, rest->ptr, size, rest->stream, rest->pool);
		if (!b)
			return NULL;
		b->xs = rest->xs;
		b->counter = rest->counter;
		b->prev = rest->prev;
		if (b->prev)
			b->prev->next = b;
		b->next = rest;
		rest->prev = b;
		set_ptr(a, rest, rest->ptr + size);
		rest->size -= size;
		pool_insert(a, rest);
	}
	b->allocated = true;
	b->requested = orig;
	a->st.allocated += b->size;
	a->st.requested += orig;
	if (a->st.allocated > a->st.max_allocated)
		a->st.max_allocated = a->st.allocated;
	trace(a, TA_ALLOC, b->ptr, orig, b->stream);
	return b;
}

static void set_params(const struct ta *a, struct params *p, uint64_t orig, uint64_t stream)
{
	memset(p, 0, sizeof *p);
	p->size = ta_round_size(&a->c, orig);
	p->pool = p->size <= TA_SMALL_SIZE ? SMALL : LARGE;
	p->alloc_size = ta_allocation_size(&a->c, p->size);
	p->stream = stream;
	p->expandable = a->c.expandable_segments;
}

int ta_malloc(struct ta *a, uint64_t orig, uint64_t stream, uint64_t *ptr)
{
	struct params p;
	set_params(a, &p, orig, stream);
	bool found = get_free_block(a, &p, true);
	if (!found) {
		if (gc_on(a))
			garbage_collect(a);
		found = alloc_block(a, &p, false) ||
			(release_available(a, &p) && alloc_block(a, &p, false)) ||
			(release_cached_blocks(a), alloc_block(a, &p, true));
	}
	if (a->failed)
		return -2;
	if (!found) {
		a->st.num_ooms++;
		uint64_t free_b = a->b.device_free ? a->b.device_free(a->b.ctx) : 0;
		trace(a, TA_OOM, free_b, p.size, stream);
		return -1;
	}
	bool split = should_split(a, p.block, p.size, p.expandable);
	struct blk *b = alloc_found(a, p.block, p.size, orig, split);
	if (!b || a->failed)
		return -2;
	*ptr = b->ptr;
	return 0;
}

/* ---- free ---- */

static void free_block(struct ta *a, struct blk *b)
{
	trace(a, TA_FREE_COMPLETED, b->ptr, b->requested, b->stream);
	b->pending = false;
	try_merge(a, b, b->prev);
	try_merge(a, b, b->next);
	pool_insert(a, b);
}

int ta_free_requested(struct ta *a, uint64_t ptr, bool pending)
{
	struct blk *b = hfind(a, ptr);
	if (!b || !b->allocated)
		return -1;
	b->allocated = false;
	a->st.allocated -= b->size;
	a->st.requested -= b->requested;
	trace(a, TA_FREE_REQUESTED, b->ptr, b->requested, b->stream);
	if (pending)
		b->pending = true;
	else
		free_block(a, b);
	return 0;
}

int ta_free_completed(struct ta *a, uint64_t ptr)
{
	struct blk *b = hfind(a, ptr);
	if (!b || !b->pending)
		return -1;
	free_block(a, b);
	return 0;
}

int ta_free(struct ta *a, uint64_t ptr)
{
	return ta_free_requested(a, ptr, false);
}

void ta_set_allowed(struct ta *a, uint64_t bytes)
{
	a->c.allowed_max = bytes;
}

const struct ta_stats *ta_stats(const struct ta *a)
{
	return &a->st;
}

const struct ta_config *ta_config(const struct ta *a)
{
	return &a->c;
}

/* ---- lifetime ---- */

struct ta *ta_new(const struct ta_config *c, const struct ta_backend *b)
{
	struct ta *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	a->c = *c;
	if (b)
		a->b = *b;
	a->rng = 0x2545f491u;
	return a;
}

void ta_free_model(struct ta *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nhash; i++)
		for (struct blk *b = a->hash[i], *next; b; b = next) {
			next = b->hnext;
			free(b);
		}
	for (struct xseg *x = a->xsegs, *next; x; x = next) {
		next = x->next;
		free(x);
	}
	free(a->hash);
	free(a->seg_base);
	free(a);
}

/* ---- following a recorded history ---- */

/* A segment's head block: the block at the start of the segment that
 * holds p (a regular segment is found from any block's chain). */
static struct blk *block_at_or_before(const struct ta *a, uint64_t p)
{
	for (const struct xseg *x = a->xsegs; x; x = x->next)
		if (p >= x->base && p < x->base + x->size) {
			struct blk *b = hfind(a, x->base);
			while (b && b->ptr + b->size <= p)
				b = b->next;
			return b;
		}
	return NULL;
}

void ta_choose(struct ta *a, uint64_t size, uint64_t stream, uint64_t *ptr, bool *new_segment,
	       uint64_t *seg_size)
{
	struct params p;
	set_params(a, &p, size, stream);
	*new_segment = false;
	*seg_size = 0;
	*ptr = 0;
	if (get_free_block(a, &p, false)) {
		*ptr = p.block->ptr;
		return;
	}
	*new_segment = true;
	if (!p.expandable) {
		*seg_size = p.alloc_size;
		return;
	}
	/* the lowest room in an existing expandable segment, and what it
	 * would map; else a new segment mapped from its start */
	struct pool *pool = &a->pools[p.pool];
	struct key k = {stream, 0, 0, 0};
	for (struct blk *it = tlower(a, pool->unmapped, &k, true, false);
	     it && it->stream == stream; it = tnext(a, pool->unmapped, it, true)) {
		struct blk *c = it;
		if (allocatable(c->prev))
			c = c->prev;
		if (!has_room(c, p.size))
			continue;
		*ptr = c->ptr;
		uint64_t have = c->mapped ? c->size : 0;
		uint64_t need = p.size - have, pg = it->xs->page;
		*seg_size = (need + pg - 1) / pg * pg;
		return;
	}
	uint64_t pg = p.pool == SMALL ? TA_SMALL_BUFFER : a->c.large_segment_size;
	*seg_size = (p.size + pg - 1) / pg * pg;
}

int ta_take(struct ta *a, uint64_t ptr, uint64_t size, uint64_t stream)
{
	struct blk *b = hfind(a, ptr);
	uint64_t rs = ta_round_size(&a->c, size);
	if (!b || b->allocated || b->pending || !b->mapped || b->size < rs || b->stream != stream)
		return -1;
	pool_erase(a, b);
	bool split = should_split(a, b, rs, a->c.expandable_segments && b->xs);
	struct ta_backend saved = a->b;
	a->b.trace = NULL;
	struct blk *got = alloc_found(a, b, rs, size, split);
	a->b = saved;
	return got && !a->failed ? 0 : -1;
}

/* A recorded history shows where reservations are, not how large: one
 * made when the device's size was unknown may run into the next. Its
 * unmapped tail t is cut at `at` (the start of another segment). */
static bool xseg_cut(struct ta *a, struct blk *t, uint64_t at)
{
	struct xseg *x = t->xs;
	if (!x || t->mapped || t->allocated || t->next || at < t->ptr || at >= t->ptr + t->size)
		return false;
	unmapped_erase(a, t);
	x->size = at - x->base;
	if (at > t->ptr) {
		t->size = at - t->ptr;
		unmapped_insert(a, t);
		return true;
	}
	if (t->prev) {
		t->prev->next = NULL;
	} else { /* nothing mapped: the reservation goes */
		for (struct xseg **p = &a->xsegs; *p; p = &(*p)->next)
			if (*p == x) {
				*p = x->next;
				break;
			}
		free(x);
	}
	blk_delete(a, t);
	return true;
}

int ta_add_segment(struct ta *a, uint64_t ptr, uint64_t size, uint64_t stream, bool small)
{
	struct blk *t = hfind(a, ptr);
	if (t && !xseg_cut(a, t, ptr))
		return -1;
	if (!t && (t = block_at_or_before(a, ptr)))
		xseg_cut(a, t, ptr);
	if (hfind(a, ptr) || !size)
		return -1;
	struct blk *b = blk_new(a, ptr, size, stream, small ? SMALL : LARGE);
	if (!b)
		return -1;
	b->counter = ++a->counter;
	seg_add(a, ptr);
	reserved_add(a, (int64_t)size);
	a->st.segments++;
	if (a->st.segments > a->st.max_segments)
		a->st.max_segments = a->st.segments;
	pool_insert(a, b);
	return a->failed ? -1 : 0;
}

int ta_map(struct ta *a, uint64_t ptr, uint64_t size, uint64_t stream, bool small)
{
	struct blk *m = hfind(a, ptr);
	if (m && m->xs && !m->mapped &&
	    (m->pool != (small ? SMALL : LARGE) || m->stream != stream)) {
		if (!xseg_cut(a, m, ptr))
			return -1;
		m = NULL;
	}
	if (!m) {
		struct blk *t = block_at_or_before(a, ptr);
		if (t && t->ptr < ptr)
			xseg_cut(a, t, ptr);
	}
	if (m && (m->mapped || !m->xs))
		return -1;
	if (!m) {
		if (block_at_or_before(a, ptr))
			return -1; /* inside a segment, not at an unmapped range's start */
		/* the device's size, hence the reservation's, may be unknown: it
		 * ends at the next segment the history shows */
		size_t i = seg_index(a, ptr + 1);
		m = new_xseg(a, stream, small ? SMALL : LARGE, true, ptr,
			     i < a->nsegs ? a->seg_base[i] - ptr : 0);
		if (!m)
			return -1;
	}
	if (size > m->size)
		return -1;
	struct ta_backend saved = a->b;
	memset(&a->b, 0, sizeof a->b);
	bool ok = map_block(a, m, size);
	a->b = saved;
	return ok && !a->failed ? 0 : -1;
}

int ta_release_segment(struct ta *a, uint64_t ptr)
{
	struct blk *b = hfind(a, ptr);
	if (!b || b->allocated || b->pending || b->xs || is_split(b))
		return -1;
	struct ta_backend saved = a->b;
	memset(&a->b, 0, sizeof a->b);
	release_block(a, b);
	a->b = saved;
	return 0;
}

int ta_unmap(struct ta *a, uint64_t ptr, uint64_t size)
{
	struct blk *b = block_at_or_before(a, ptr);
	if (!b || b->allocated || b->pending || !b->mapped || ptr + size > b->ptr + b->size)
		return -1;
	struct ta_backend saved = a->b;
	memset(&a->b, 0, sizeof a->b);
	unmap_block(a, b); /* the block's wholly free pages: what the allocator unmaps */
	a->b = saved;
	return a->failed ? -1 : 0;
}

static struct blk *block_containing(const struct ta *a, uint64_t p)
{
	struct blk *b = block_at_or_before(a, p);
	if (b)
		return b;
	size_t i = seg_index(a, p + 1); /* the last base <= p */
	if (!i)
		return NULL;
	for (b = hfind(a, a->seg_base[i - 1]); b && b->ptr + b->size <= p; b = b->next)
		;
	return b && b->ptr <= p ? b : NULL;
}

int ta_assume_live(struct ta *a, uint64_t ptr, uint64_t size, uint64_t requested)
{
	struct blk *b = hfind(a, ptr);
	if (!b)
		b = block_containing(a, ptr);
	if (!b || b->allocated || b->pending || !b->mapped || ptr + size > b->ptr + b->size)
		return -1;
	pool_erase(a, b);
	if (b->ptr < ptr) { /* a free block before it */
		struct blk *f = blk_new(a, b->ptr, ptr - b->ptr, b->stream, b->pool);
		if (!f)
			return -1;
		f->xs = b->xs;
		f->counter = b->counter;
		f->prev = b->prev;
		if (b->prev)
			b->prev->next = f;
		f->next = b;
		b->prev = f;
		b->size -= ptr - b->ptr;
		set_ptr(a, b, ptr);
		pool_insert(a, f);
	}
	struct ta_backend saved = a->b;
	a->b.trace = NULL;
	struct blk *got = alloc_found(a, b, size, requested, b->size > size);
	a->b = saved;
	return got && !a->failed ? 0 : -1;
}

/* ---- the state ---- */

void ta_walk(const struct ta *a, void (*fn)(void *ctx, const struct ta_block_info *b), void *ctx)
{
	/* segment heads: blocks with no prev, in address order */
	size_t n = 0;
	for (size_t i = 0; i < a->nhash; i++)
		for (struct blk *b = a->hash[i]; b; b = b->hnext)
			n += !b->prev;
	struct blk **heads = n ? malloc(n * sizeof *heads) : NULL;
	if (n && !heads)
		return;
	size_t k = 0;
	for (size_t i = 0; i < a->nhash; i++)
		for (struct blk *b = a->hash[i]; b; b = b->hnext)
			if (!b->prev)
				heads[k++] = b;
	for (size_t i = 1; i < n; i++) /* insertion sort: few segments */
		for (size_t j = i; j > 0 && heads[j - 1]->ptr > heads[j]->ptr; j--) {
			struct blk *t = heads[j];
			heads[j] = heads[j - 1];
			heads[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++)
		for (struct blk *b = heads[i]; b; b = b->next) {
			struct ta_block_info info = {
			    b->ptr,	b->size,   b->requested,     b->stream,	    b->allocated,
			    b->pending, b->mapped, b->pool == SMALL, b->xs != NULL, b == heads[i]};
			fn(ctx, &info);
		}
	free(heads);
}

static uint64_t tmax_size(const struct blk *t)
{
	if (!t)
		return 0;
	uint64_t m = t->size, l = tmax_size(t->l), r = tmax_size(t->r);
	return m > l ? (m > r ? m : r) : (l > r ? l : r);
}

uint64_t ta_largest_free(const struct ta *a)
{
	uint64_t s = tmax_size(a->pools[SMALL].blocks), l = tmax_size(a->pools[LARGE].blocks);
	return s > l ? s : l;
}
