/* PyTorch's memory snapshot as typed items (reader/torchsnap.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/torchsnap.h"

/* The pickle's classes (pickle.h): which containers stream. */
enum {
	C_PLAIN = 0,
	C_ROOT = 1,   /* the top-level dict (or a bare list: segments) */
	C_SEGS = 2,   /* "segments" */
	C_TRACES = 3, /* "device_traces": a list per device */
	C_ANNOT = 4,  /* "external_annotations" */
	C_DEV = 5,    /* one device's entries; the device in bits 8.. */
};
#define DEV_SHIFT 8
#define DEV_MAX	  ((1u << 23) - 1)

/* Frames the pickle shares (one dict per distinct frame, as PyTorch's
 * py_symbolize makes them), parsed once: by the dict's address, which a
 * reference held here keeps unique. */
struct fcache {
	struct pk_obj **key;
	struct ts_frame *f;
	size_t n, cap; /* cap: a power of two */
};

struct ts {
	struct pk *pk;
	struct pk_error err;
	struct fcache fc;
	struct ts_item item;
	bool root_list, snapshot;
	int64_t only_device;
	/* scratch: the item's frames and blocks */
	struct ts_frame *frames;
	size_t nframes, frames_cap;
	struct ts_block *blocks;
	size_t blocks_cap;
};

static uint32_t classify(void *ctx, uint32_t parent, const struct pk_val *key, uint64_t index,
			 enum pk_kind kind)
{
	struct ts *s = ctx;
	if (parent == PK_CLS_ROOT) {
		s->root_list = kind == PK_LIST;
		return C_ROOT | PK_CLS_STREAM;
	}
	uint32_t p = parent & ~PK_CLS_STREAM;
	if (p == C_ROOT && !s->root_list && key && kind == PK_LIST) {
		if (pk_str_is(key, "segments"))
			return C_SEGS | PK_CLS_STREAM;
		if (pk_str_is(key, "device_traces"))
			return C_TRACES;
		if (pk_str_is(key, "external_annotations"))
			return C_ANNOT | PK_CLS_STREAM;
	}
	if (p == C_TRACES && kind == PK_LIST && index <= DEV_MAX)
		return (C_DEV | (uint32_t)index << DEV_SHIFT) | PK_CLS_STREAM;
	return C_PLAIN;
}

static int bad(struct ts *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct ts *s, const char *fmt, ...)
{
	va_list ap;
	s->err.code = PK_ERR_MALFORMED;
	s->err.offset = pk_offset(s->pk);
	int n = snprintf(s->err.msg, sizeof s->err.msg, "not a PyTorch memory snapshot: ");
	va_start(ap, fmt);
	vsnprintf(s->err.msg + n, sizeof s->err.msg - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- fields ---- */

static bool get_u64(const struct pk_val *d, const char *key, uint64_t *out)
{
	const struct pk_val *v = pk_get(d, key);
	int64_t i;
	if (!v)
		return false;
	if (pk_u64(v, out))
		return true;
	if (pk_i64(v, &i)) { /* a negative stream or id: its bits, as C++ cast it */
		*out = (uint64_t)i;
		return true;
	}
	return false;
}

static bool get_bool(const struct pk_val *d, const char *key, bool *out)
{
	const struct pk_val *v = pk_get(d, key);
	if (!v || (v->kind != PK_BOOL && v->kind != PK_INT))
		return false;
	*out = v->i != 0;
	return true;
}

static const char *get_str(const struct pk_val *d, const char *key)
{
	const struct pk_val *v = pk_get(d, key);
	return v ? pk_str(v, NULL) : NULL;
}

static int need_u64(struct ts *s, const struct pk_val *d, const char *what, const char *key,
		    uint64_t *out)
{
	if (get_u64(d, key, out))
		return 0;
	return bad(s, "a %s without an integer '%s'", what, key);
}

/* ---- frames ---- */

static size_t fc_slot(const struct fcache *c, const struct pk_obj *o)
{
	uint64_t x = (uint64_t)(uintptr_t)o * 0x9e3779b97f4a7c15ull;
	return (size_t)(x >> 24) & (c->cap - 1);
}

static const struct ts_frame *fc_find(const struct fcache *c, const struct pk_obj *o)
{
	if (!c->cap)
		return NULL;
	for (size_t i = fc_slot(c, o);; i = (i + 1) & (c->cap - 1)) {
		if (c->key[i] == o)
			return &c->f[i];
		if (!c->key[i])
			return NULL;
	}
}

static void fc_clear(struct fcache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		if (c->key[i])
			pk_obj_unref(c->key[i]);
	pk_budget_discharge((uint64_t)c->cap * (sizeof *c->key + sizeof *c->f));
	free(c->key);
	free(c->f);
	memset(c, 0, sizeof *c);
}

/* Keeps f, parsed from the shared dict o (a reference is taken). false
 * when the budget or memory says no: the frame is then parsed each time. */
static bool fc_add(struct fcache *c, struct pk_obj *o, const struct ts_frame *f)
{
	if ((c->n + 1) * 2 > c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 1024;
		if (!pk_budget_charge((uint64_t)cap * (sizeof *c->key + sizeof *c->f)))
			return false;
		struct pk_obj **k = calloc(cap, sizeof *k);
		struct ts_frame *v = calloc(cap, sizeof *v);
		if (!k || !v) {
			free(k);
			free(v);
			pk_budget_discharge((uint64_t)cap * (sizeof *c->key + sizeof *c->f));
			return false;
		}
		struct fcache nc = {k, v, c->n, cap};
		for (size_t i = 0; i < c->cap; i++)
			if (c->key[i]) {
				size_t j = fc_slot(&nc, c->key[i]);
				while (k[j])
					j = (j + 1) & (cap - 1);
				k[j] = c->key[i];
				v[j] = c->f[i];
			}
		pk_budget_discharge((uint64_t)c->cap * (sizeof *c->key + sizeof *c->f));
		free(c->key);
		free(c->f);
		*c = nc;
	}
	size_t j = fc_slot(c, o);
	while (c->key[j])
		j = (j + 1) & (c->cap - 1);
	pk_obj_ref(o);
	c->key[j] = o;
	c->f[j] = *f;
	c->n++;
	return true;
}

static int reserve_frames(struct ts *s, size_t n)
{
	if (s->nframes + n <= s->frames_cap)
		return 0;
	size_t cap = s->frames_cap ? s->frames_cap : 64;
	while (cap < s->nframes + n)
		cap *= 2;
	void *p = realloc(s->frames, cap * sizeof *s->frames);
	if (!p) {
		s->err.code = PK_ERR_NOMEM;
		snprintf(s->err.msg, sizeof s->err.msg, "out of memory");
		return -1;
	}
	s->frames = p;
	s->frames_cap = cap;
	return 0;
}

/* The frames of list `v` (a "frames" value) appended to the scratch;
 * *first is where they start. Frames that are not dicts read as "?". */
/* The scratch's frames from off (NULL while it holds none: no NULL + 0). */
static const struct ts_frame *frames_at(const struct ts *s, size_t off)
{
	return s->frames ? s->frames + off : NULL;
}

static int take_frames(struct ts *s, const struct pk_val *v, size_t *first, size_t *n)
{
	*first = s->nframes;
	*n = 0;
	if (!v || v->kind != PK_LIST)
		return 0;
	size_t len = pk_len(v);
	if (reserve_frames(s, len))
		return -1;
	for (size_t i = 0; i < len; i++) {
		const struct pk_val *f = pk_item(v, i);
		struct ts_frame *out = &s->frames[s->nframes++];
		const struct ts_frame *hit = f->kind == PK_DICT ? fc_find(&s->fc, f->o) : NULL;
		if (hit) {
			*out = *hit;
			continue;
		}
		const struct pk_val *fn = pk_get(f, "filename"), *nm = pk_get(f, "name");
		out->filename = fn ? pk_str(fn, &out->filename_len) : NULL;
		out->name = nm ? pk_str(nm, &out->name_len) : NULL;
		if (!out->filename) {
			out->filename = "?";
			out->filename_len = 1;
		}
		if (!out->name) {
			out->name = "?";
			out->name_len = 1;
		}
		if (!get_u64(f, "line", &out->line))
			out->line = 0;
		/* a dict the memo also holds (refs > 1 beside its list's) */
		out->shared = f->kind == PK_DICT && f->o->refs > 1 ? f->o : NULL;
		if (!fn || !nm)
			out->shared = NULL;
		if (out->shared && !fc_add(&s->fc, out->shared, out))
			out->shared = NULL; /* no room to keep it: no identity either */
	}
	*n = len;
	return 0;
}

/* ---- items ---- */

static enum ts_state parse_state(const char *st)
{
	if (!st)
		return TS_STATE_UNKNOWN;
	if (!strcmp(st, "active_allocated"))
		return TS_ACTIVE_ALLOCATED;
	if (!strcmp(st, "active_pending_free") || !strcmp(st, "active_awaiting_free"))
		return TS_ACTIVE_PENDING_FREE;
	if (!strcmp(st, "inactive"))
		return TS_INACTIVE;
	return TS_STATE_UNKNOWN;
}

static int take_segment(struct ts *s, const struct pk_val *d)
{
	struct ts_segment *g = &s->item.seg;
	if (d->kind != PK_DICT)
		return bad(s, "a segment that is a %s, not a dict", pk_kind_name(d->kind));
	memset(g, 0, sizeof *g);
	uint64_t dev = 0;
	if (need_u64(s, d, "segment", "address", &g->address) ||
	    need_u64(s, d, "segment", "total_size", &g->total_size))
		return -1;
	g->device = get_u64(d, "device", &dev) && dev <= DEV_MAX ? (int64_t)dev : 0;
	get_u64(d, "allocated_size", &g->allocated_size);
	get_u64(d, "active_size", &g->active_size);
	get_u64(d, "requested_size", &g->requested_size);
	get_u64(d, "stream", &g->stream);
	const char *type = get_str(d, "segment_type");
	g->small = type && !strcmp(type, "small");
	get_bool(d, "is_expandable", &g->expandable);
	const struct pk_val *pool = pk_get(d, "segment_pool_id");
	if (pool && pool->kind == PK_TUPLE && pk_len(pool) == 2) {
		int64_t a = 0, b = 0;
		pk_i64(pk_item(pool, 0), &a);
		pk_i64(pk_item(pool, 1), &b);
		g->pool_a = (uint64_t)a;
		g->pool_b = (uint64_t)b;
	}
	s->nframes = 0;
	size_t first, n;
	if (take_frames(s, pk_get(d, "frames"), &first, &n))
		return -1;
	const struct pk_val *blocks = pk_get(d, "blocks");
	size_t nb = blocks && blocks->kind == PK_LIST ? pk_len(blocks) : 0;
	if (nb > s->blocks_cap) {
		void *p = realloc(s->blocks, nb * sizeof *s->blocks);
		if (!p) {
			s->err.code = PK_ERR_NOMEM;
			snprintf(s->err.msg, sizeof s->err.msg, "out of memory");
			return -1;
		}
		s->blocks = p;
		s->blocks_cap = nb;
	}
	uint64_t at = g->address;
	for (size_t i = 0; i < nb; i++) {
		const struct pk_val *b = pk_item(blocks, i);
		struct ts_block *o = &s->blocks[i];
		if (b->kind != PK_DICT || !get_u64(b, "size", &o->size))
			return bad(s, "block %zu of the segment at 0x%llx has no integer 'size'", i,
				   (unsigned long long)g->address);
		if (!get_u64(b, "address", &o->address))
			o->address = at; /* older snapshots: blocks follow each other */
		at = o->address + o->size;
		o->has_requested = get_u64(b, "requested_size", &o->requested_size);
		o->state = parse_state(get_str(b, "state"));
		size_t bf, bn;
		if (take_frames(s, pk_get(b, "frames"), &bf, &bn))
			return -1;
		/* frames move as the scratch grows: the offset until it is final */
		o->frames.f = (const struct ts_frame *)(uintptr_t)bf;
		o->frames.n = bn;
	}
	for (size_t i = 0; i < nb; i++)
		s->blocks[i].frames.f = frames_at(s, (uintptr_t)s->blocks[i].frames.f);
	g->frames.f = frames_at(s, first);
	g->frames.n = n;
	g->blocks = s->blocks;
	g->nblocks = nb;
	return 0;
}

static const char *const action_names[TS_ACTION_MAX_ + 1] = {
    "unknown",	     "alloc",	     "free_requested", "free_completed",
    "segment_alloc", "segment_free", "segment_map",    "segment_unmap",
    "oom",	     "snapshot",
};

const char *ts_action_name(enum ts_action a)
{
	return (unsigned)a <= TS_ACTION_MAX_ ? action_names[a] : "unknown";
}

const char *ts_state_name(enum ts_state st)
{
	static const char *const names[] = {"inactive", "active_allocated", "active_pending_free",
					    "unknown"};
	return (unsigned)st <= TS_STATE_UNKNOWN ? names[st] : "unknown";
}

static enum ts_action parse_action(const char *a)
{
	for (int i = 1; i <= TS_ACTION_MAX_; i++)
		if (!strcmp(a, action_names[i]))
			return (enum ts_action)i;
	return TS_UNKNOWN;
}

static int take_entry(struct ts *s, const struct pk_val *d, uint64_t device, uint64_t index)
{
	struct ts_entry *e = &s->item.entry;
	if (d->kind != PK_DICT)
		return bad(s, "trace entry %llu of device %llu is a %s, not a dict",
			   (unsigned long long)index, (unsigned long long)device,
			   pk_kind_name(d->kind));
	memset(e, 0, sizeof *e);
	e->device = (int64_t)device;
	e->index = index;
	const char *a = get_str(d, "action");
	if (!a)
		return bad(s, "trace entry %llu of device %llu has no 'action'",
			   (unsigned long long)index, (unsigned long long)device);
	e->action = parse_action(a);
	e->annotate = e->action == TS_UNKNOWN && !strcmp(a, "annotate");
	e->user_metadata = get_str(d, "user_metadata");
	if (e->action == TS_OOM)
		get_u64(d, "device_free", &e->device_free);
	else
		get_u64(d, "addr", &e->addr);
	get_u64(d, "size", &e->size);
	get_u64(d, "stream", &e->stream);
	e->has_time = get_u64(d, "time_us", &e->time_us);
	const struct pk_val *fr = pk_get(d, "frames");
	e->has_frames = fr != NULL;
	s->nframes = 0;
	size_t first, n;
	if (take_frames(s, fr, &first, &n))
		return -1;
	e->frames.f = frames_at(s, first);
	e->frames.n = n;
	return 0;
}

static int take_settings(struct ts *s, const struct pk_val *d)
{
	struct ts_settings *st = &s->item.settings;
	memset(st, 0, sizeof *st);
	if (d->kind != PK_DICT)
		return bad(s, "allocator_settings is a %s, not a dict", pk_kind_name(d->kind));
	st->dict = d;
	st->conf = get_str(d, "PYTORCH_CUDA_ALLOC_CONF");
	const struct pk_val *v = pk_get(d, "max_split_size");
	int64_t i;
	if (v && pk_i64(v, &i)) {
		st->has_max_split = true;
		/* SIZE_MAX, pickled as -1 by int64_t(), means no limit */
		st->max_split_unset = i < 0;
		st->max_split_size = i < 0 ? UINT64_MAX : (uint64_t)i;
	} else if (v && v->kind == PK_UINT) {
		st->has_max_split = true;
		st->max_split_unset = v->u == UINT64_MAX;
		st->max_split_size = v->u;
	}
	v = pk_get(d, "garbage_collection_threshold");
	st->has_gc = v && pk_num(v, &st->garbage_collection_threshold) &&
		     isfinite(st->garbage_collection_threshold);
	st->has_expandable = get_bool(d, "expandable_segments", &st->expandable_segments);
	st->has_release_lock =
	    get_bool(d, "release_lock_on_cudamalloc", &st->release_lock_on_cudamalloc);
	v = pk_get(d, "roundup_power2_divisions");
	if (v && v->kind == PK_DICT) { /* keys "1", "2", "4"... one per power of two from 1 MiB */
		st->has_roundup = true;
		for (size_t k = 0; k + 1 < pk_len(v); k += 2) {
			const char *key = pk_str(pk_item(v, k), NULL);
			uint64_t n;
			if (!key || !pk_u64(pk_item(v, k + 1), &n))
				continue;
			char *end;
			unsigned long mb = strtoul(key, &end, 10);
			if (*end || !mb || (mb & (mb - 1)))
				continue;
			int idx = __builtin_ctzl(mb);
			if (idx < 16)
				st->roundup[idx] = n;
		}
	}
	return 0;
}

static int take_annotation(struct ts *s, const struct pk_val *d)
{
	struct ts_annotation *a = &s->item.ann;
	memset(a, 0, sizeof *a);
	if (d->kind != PK_DICT)
		return bad(s, "an external annotation is a %s, not a dict", pk_kind_name(d->kind));
	uint64_t dev = 0;
	a->device = get_u64(d, "device", &dev) && dev <= DEV_MAX ? (int64_t)dev : -1;
	a->has_time = get_u64(d, "time_us", &a->time_us);
	a->stage = get_str(d, "stage");
	a->name = get_str(d, "name");
	return 0;
}

/* ---- the API ---- */

struct ts *ts_open(int fd, uint64_t size, struct pk_error *err)
{
	struct ts *s = calloc(1, sizeof *s);
	if (!s) {
		memset(err, 0, sizeof *err);
		err->code = PK_ERR_NOMEM;
		snprintf(err->msg, sizeof err->msg, "out of memory");
		return NULL;
	}
	s->only_device = -1;
	s->pk = pk_open(fd, size, classify, s, err);
	if (!s->pk) {
		free(s);
		return NULL;
	}
	return s;
}

/* One pickle item as a snapshot item: 1 (s->item), 0 (passed over), -1. */
static int take(struct ts *s, const struct pk_item *it)
{
	uint32_t cls = it->cls;
	if (cls == C_ROOT && s->root_list)
		cls = C_SEGS;
	switch (cls & 0xff) {
	case C_SEGS:
		s->snapshot = true;
		s->item.kind = TS_ITEM_SEGMENT;
		return take_segment(s, &it->v) ? -1 : 1;
	case C_DEV: {
		uint64_t dev = cls >> DEV_SHIFT;
		if (s->only_device >= 0 && (int64_t)dev != s->only_device)
			return 0;
		s->item.kind = TS_ITEM_ENTRY;
		return take_entry(s, &it->v, dev, it->index) ? -1 : 1;
	}
	case C_ANNOT:
		s->item.kind = TS_ITEM_ANNOTATION;
		return take_annotation(s, &it->v) ? -1 : 1;
	case C_ROOT:
		if (pk_str_is(&it->key, "segments") || pk_str_is(&it->key, "device_traces"))
			s->snapshot = true;
		if (!pk_str_is(&it->key, "allocator_settings"))
			return 0;
		s->item.kind = TS_ITEM_SETTINGS;
		return take_settings(s, &it->v) ? -1 : 1;
	default:
		return 0;
	}
}

int ts_next(struct ts *s, const struct ts_item **out)
{
	if (s->err.code)
		return -1;
	for (;;) {
		const struct pk_item *it;
		int rc = pk_next(s->pk, &it);
		if (rc < 0) {
			s->err = *pk_error(s->pk);
			return -1;
		}
		if (rc == 0) {
			if (!s->snapshot)
				return bad(s,
					   "the pickle holds no 'segments' or 'device_traces' (is "
					   "it from torch.cuda.memory._dump_snapshot?)");
			return 0;
		}
		rc = take(s, it);
		if (rc < 0)
			return -1;
		if (rc > 0) {
			*out = &s->item;
			return 1;
		}
	}
}

void ts_rewind(struct ts *s)
{
	fc_clear(&s->fc);
	pk_rewind(s->pk);
	memset(&s->err, 0, sizeof s->err);
	s->snapshot = false;
}

void ts_only_device(struct ts *s, int64_t device)
{
	s->only_device = device;
}

const struct pk_error *ts_error(const struct ts *s)
{
	return &s->err;
}

int ts_protocol(const struct ts *s)
{
	return pk_protocol(s->pk);
}

bool ts_was_snapshot(const struct ts *s)
{
	return s->snapshot;
}

void ts_close(struct ts *s)
{
	if (!s)
		return;
	fc_clear(&s->fc);
	pk_close(s->pk);
	free(s->frames);
	free(s->blocks);
	free(s);
}
