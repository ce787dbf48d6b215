/* A PyTorch memory snapshot pickle converted into a trace
 * (reader/snapimport.h says what maps to what). Three reads of the
 * pickle after its scan: pass A learns the devices, the times, the
 * settings and what was live before the history's first entry; pass B
 * writes the events, merged by time across devices (a cursor per device
 * with entries). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpumemtrace/format.h"
#include "common/fwhist.h"
#include "reader/reader.h"
#include "reader/snapimport.h"
#include "reader/torchsnap.h"
#include "reader/twrite.h"

#define MAX_DEVICES 4096
/* Devices with a history: each is a cursor that reads the whole pickle
 * again, so a hostile one with thousands would cost thousands of reads. */
#define MAX_TRACED_DEVICES 64
#define TID		   1	/* the snapshot has no threads: one for every event */
#define FW_BATCH	   4096 /* history entries per FWTRACE record */
#define FW_SEQ		   1	/* the one snapshot an import holds */
#define FW_SETTINGS	   32
#define US		   1000ull
#define META_MAX	   200 /* bytes of a user_metadata string kept */

/* ---- a u64 -> u64 map: linear probing, backward-shift deletion ---- */

struct u64map {
	uint64_t *k, *v; /* key 0 is empty: keys are stored + 1 */
	size_t n, cap;
};

static size_t mix(uint64_t x, size_t cap)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

static int map_grow(struct u64map *m)
{
	size_t cap = m->cap ? 2 * m->cap : 64;
	if (!pk_budget_charge((uint64_t)cap * 16))
		return -1;
	uint64_t *k = calloc(cap, 8), *v = calloc(cap, 8);
	if (!k || !v) {
		free(k);
		free(v);
		pk_budget_discharge((uint64_t)cap * 16);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->k[i]) {
			size_t j = mix(m->k[i], cap);
			while (k[j])
				j = (j + 1) & (cap - 1);
			k[j] = m->k[i];
			v[j] = m->v[i];
		}
	pk_budget_discharge((uint64_t)m->cap * 16);
	free(m->k);
	free(m->v);
	m->k = k;
	m->v = v;
	m->cap = cap;
	return 0;
}

static uint64_t *map_find(const struct u64map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	key++;
	for (size_t i = mix(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->k[i] == key)
			return &m->v[i];
		if (!m->k[i])
			return NULL;
	}
}

static int map_put(struct u64map *m, uint64_t key, uint64_t val)
{
	uint64_t *v = map_find(m, key);
	if (v) {
		*v = val;
		return 0;
	}
	if ((m->n + 1) * 2 > m->cap && map_grow(m))
		return -1;
	key++;
	size_t i = mix(key, m->cap);
	while (m->k[i])
		i = (i + 1) & (m->cap - 1);
	m->k[i] = key;
	m->v[i] = val;
	m->n++;
	return 0;
}

static bool map_del(struct u64map *m, uint64_t key)
{
	if (!m->cap)
		return false;
	key++;
	size_t i = mix(key, m->cap);
	while (m->k[i] != key) {
		if (!m->k[i])
			return false;
		i = (i + 1) & (m->cap - 1);
	}
	for (size_t j = i;;) { /* shift the run back over the hole */
		j = (j + 1) & (m->cap - 1);
		if (!m->k[j])
			break;
		size_t home = mix(m->k[j], m->cap);
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			m->k[i] = m->k[j];
			m->v[i] = m->v[j];
			i = j;
		}
	}
	m->k[i] = 0;
	m->n--;
	return true;
}

static void map_free(struct u64map *m)
{
	pk_budget_discharge((uint64_t)m->cap * 16);
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof *m);
}

/* ---- ranges: disjoint [start, end) pieces, sorted, each with a handle ---- */

struct piece {
	uint64_t start, end, handle;
};

struct pieces {
	struct piece *v;
	size_t n, cap;
};

static int pieces_insert(struct pieces *s, size_t at, struct piece p)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		if (!pk_budget_charge((uint64_t)(cap - s->cap) * sizeof *s->v))
			return -1;
		void *q = realloc(s->v, cap * sizeof *s->v);
		if (!q)
			return -1;
		s->v = q;
		s->cap = cap;
	}
	memmove(s->v + at + 1, s->v + at, (s->n - at) * sizeof *s->v);
	s->v[at] = p;
	s->n++;
	return 0;
}

static void pieces_remove(struct pieces *s, size_t at)
{
	memmove(s->v + at, s->v + at + 1, (s->n - at - 1) * sizeof *s->v);
	s->n--;
}

/* The first piece whose end is above a. */
static size_t pieces_first(const struct pieces *s, uint64_t a)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->v[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void pieces_free(struct pieces *s)
{
	pk_budget_discharge((uint64_t)s->cap * sizeof *s->v);
	free(s->v);
	memset(s, 0, sizeof *s);
}

/* ---- the importer's state ---- */

/* A frame, interned: a Python frame's PYFRAME id, or a C++ frame's
 * made-up address in the module of its library. */
struct frame {
	uint64_t hash, line, ip;
	size_t file_off, name_off; /* into the arena; NUL-terminated */
	uint32_t file_len, name_len;
	uint8_t module;	 /* MOD_* for a C++ frame; MOD_PYTHON for Python */
	uint8_t written; /* 0 no, 2 queued (pending), 1 its record is written */
};

enum { MOD_PYTHON = 0, MOD_TORCH, MOD_INTERP, MOD_LIBC, MOD_COUNT };
static const char *const module_path[MOD_COUNT] = {"", "libtorch.so (C++ frames of the snapshot)",
						   "python3 (C frames of the snapshot)",
						   "libc.so.6 (C frames of the snapshot)"};
#define MOD_BASE(m) (0x100000000000ull * (uint64_t)(m))
#define MOD_SIZE    0x100000000000ull

/* A segment live before the history's first entry, rebuilt. */
struct before {
	int64_t device;
	uint64_t address, size;
	bool expandable;
	size_t frames_off, nframes; /* its frames (frame table ids), or none */
};

struct dev {
	bool seen;
	uint64_t entries, timed, first_ns, last_ns;
	struct u64map live;	 /* pass A: segments the history allocated, live */
	struct pieces mapped_in; /* pass A: ranges the history mapped, still mapped */
	struct pieces mapped;	 /* pass B: mapped ranges and their handles */
	/* pass B's cursor */
	struct ts *cur;
	const struct ts_item *item;
	uint64_t t, t_prev;
	bool done;
	/* its history entries waiting for their FWTRACE record */
	struct gmt_fw_entry *fw;
	size_t nfw;
};

/* A segment at the snapshot's end, for its FWSEG record. */
struct fseg {
	int64_t device;
	uint64_t addr, size, stream, pool_a, pool_b;
	unsigned flags;
	size_t frames_off, nframes, first_block, nblocks;
};

struct fblk {
	uint64_t addr, size, req;
	uint32_t state;
	size_t frames_off, nframes;
};

struct imp {
	struct ts *ts;
	int in_fd;
	uint64_t in_size;
	struct pk_error *err;
	struct tw w;
	struct dev *dev;
	int64_t ndev; /* devices 0..ndev-1 have state */
	/* frames */
	struct frame *f;
	size_t nf, fcap;
	uint32_t *fslots;
	size_t nfslots;
	char *arena;
	size_t alen, acap;
	struct u64map shared; /* a shared frame dict's pointer -> frame index + 1 */
	struct pk_obj **held;
	size_t nheld, heldcap;
	uint64_t next_pyframe, next_ip[MOD_COUNT];
	bool module_written[MOD_COUNT];
	size_t *pending; /* frames whose record is still to be written */
	size_t npending, pendcap;
	/* stack nodes: (parent, ip) -> id */
	struct u64map node_of; /* key: hash of the pair -> index into nodes + 1 */
	uint64_t *node_parent, *node_ip;
	size_t nnodes, nodecap;
	uint64_t before_stack; /* the frame "[reserved before the history began]" */
	/* what pass A learnt */
	struct before *before;
	size_t nbefore, beforecap;
	size_t *bframes; /* frames of the rebuilt segments */
	size_t nbframes, bframecap;
	uint64_t segments, entries, annotations, segment_events;
	bool have_settings, no_time, some_time, cpp_frames;
	char *conf;
	uint64_t t_start, t_end;
	uint64_t next_handle, ranges_open, range_id;
	struct u64map open_range; /* name hash -> open count (for END's id) */
	char meta[META_MAX + 1];  /* the user_metadata in force ("": none) */
	uint64_t meta_id;	  /* its range's id */
	uint64_t inconsistent;	  /* frees and unmaps of what was not there */
	/* the framework-history records: the end state and the settings */
	struct fseg *fsegs;
	size_t nfsegs, fsegcap;
	struct fblk *fblks;
	size_t nfblks, fblkcap;
	char *set_key[FW_SETTINGS], *set_val[FW_SETTINGS];
	size_t nset;
	bool any_frames;
	uint64_t t_snap; /* the snapshot's moment: the history's last entry */
};

static int fail(struct imp *m, enum pk_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct imp *m, enum pk_err code, const char *fmt, ...)
{
	va_list ap;
	if (m->err->code)
		return -1;
	m->err->code = code;
	va_start(ap, fmt);
	vsnprintf(m->err->msg, sizeof m->err->msg, fmt, ap);
	va_end(ap);
	return -1;
}

static int nomem(struct imp *m)
{
	return fail(m, PK_ERR_LIMIT,
		    "the snapshot's frames and stacks need more than %" PRIu64
		    " MiB (GPUMEMTRACE_PICKLE_MAX_MB)",
		    pk_budget() >> 20);
}

static int from_ts(struct imp *m, struct ts *ts)
{
	*m->err = *ts_error(ts);
	return -1;
}

static int write_failed(struct imp *m)
{
	return fail(m, PK_ERR_IO, "cannot write the converted trace: %s", strerror(m->w.err));
}

/* Grows an array, against the budget. */
static int grow(struct imp *m, void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	if (!pk_budget_charge((uint64_t)(c - *cap) * elem))
		return nomem(m);
	void *p = realloc(*arr, c * elem);
	if (!p) {
		pk_budget_discharge((uint64_t)(c - *cap) * elem);
		return nomem(m);
	}
	*arr = p;
	*cap = c;
	return 0;
}

static struct dev *dev_get(struct imp *m, int64_t d)
{
	if (d < 0 || d >= MAX_DEVICES) {
		fail(m, PK_ERR_LIMIT, "device %" PRId64 ": at most %d devices are read", d,
		     MAX_DEVICES);
		return NULL;
	}
	if (d >= m->ndev) {
		struct dev *v = realloc(m->dev, (size_t)(d + 1) * sizeof *v);
		if (!v) {
			nomem(m);
			return NULL;
		}
		memset(v + m->ndev, 0, (size_t)(d + 1 - m->ndev) * sizeof *v);
		m->dev = v;
		m->ndev = d + 1;
	}
	m->dev[d].seen = true;
	return &m->dev[d];
}

/* ---- frames ---- */

static uint64_t hash_bytes(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* Python's frames end in .py (or are <string>, <frozen ...>); the rest
 * are C++ (stacks="all"): the interpreter's own C, the C library, or
 * PyTorch's. A C++ frame's file is often "" or "??" (no line table):
 * real 2.x snapshots name NativeCachingAllocator::malloc with "". Our
 * own marker frames ("[reserved before the history began]") have no file
 * and a bracketed name: PYFRAMEs, like "[thread runs no Python]". */
static int frame_module(const struct ts_frame *f)
{
	if (!f->filename_len && f->name_len && f->name[0] == '[')
		return MOD_PYTHON;
	if (f->filename_len &&
	    (ends_with(f->filename, f->filename_len, ".py") || f->filename[0] == '<'))
		return MOD_PYTHON;
	if (!strncmp(f->name, "_Py", 3) || !strncmp(f->name, "Py", 2) ||
	    !strncmp(f->name, "method_vectorcall", 17) || !strncmp(f->name, "cfunction_", 10) ||
	    !strncmp(f->filename, "Python/", 7) || !strncmp(f->filename, "Objects/", 8) ||
	    !strncmp(f->filename, "Modules/", 8) || !strncmp(f->filename, "Include/", 8) ||
	    strstr(f->filename, "/Python/") || strstr(f->filename, "/Objects/") ||
	    strstr(f->filename, "/Modules/") || strstr(f->filename, "/Include/"))
		return MOD_INTERP;
	if (!strncmp(f->name, "__libc_", 7) || !strcmp(f->name, "_start") ||
	    !strcmp(f->name, "start_thread") || !strcmp(f->name, "clone") ||
	    !strcmp(f->name, "clone3"))
		return MOD_LIBC;
	return MOD_TORCH;
}

static int frame_slots_grow(struct imp *m)
{
	size_t n = m->nfslots ? 2 * m->nfslots : 1024;
	if (!pk_budget_charge((uint64_t)n * 4))
		return nomem(m);
	uint32_t *s = calloc(n, 4);
	if (!s)
		return nomem(m);
	for (size_t i = 0; i < m->nf; i++) {
		size_t j = (size_t)m->f[i].hash & (n - 1);
		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = (uint32_t)(i + 1);
	}
	pk_budget_discharge((uint64_t)m->nfslots * 4);
	free(m->fslots);
	m->fslots = s;
	m->nfslots = n;
	return 0;
}

static int arena_add(struct imp *m, const char *s, size_t n, size_t *off)
{
	if (grow(m, (void **)&m->arena, &m->acap, m->alen + n + 1, 1))
		return -1;
	*off = m->alen;
	memcpy(m->arena + m->alen, s, n);
	m->arena[m->alen + n] = 0;
	m->alen += n + 1;
	return 0;
}

/* The frame's index in the table (interned by content), or -1. */
static long frame_intern(struct imp *m, const struct ts_frame *f)
{
	uint64_t *cached = f->shared ? map_find(&m->shared, (uint64_t)(uintptr_t)f->shared) : NULL;
	if (cached)
		return (long)*cached - 1;
	uint64_t h = hash_bytes(0xcbf29ce484222325ull, f->filename, f->filename_len);
	h = hash_bytes(h * 31 + f->line, f->name, f->name_len) | 1;
	if ((m->nf + 1) * 2 > m->nfslots && frame_slots_grow(m))
		return -1;
	size_t j = (size_t)h & (m->nfslots - 1);
	long idx = -1;
	for (; m->fslots[j]; j = (j + 1) & (m->nfslots - 1)) {
		const struct frame *e = &m->f[m->fslots[j] - 1];
		if (e->hash == h && e->line == f->line && e->file_len == f->filename_len &&
		    e->name_len == f->name_len &&
		    !memcmp(m->arena + e->file_off, f->filename, f->filename_len) &&
		    !memcmp(m->arena + e->name_off, f->name, f->name_len)) {
			idx = (long)m->fslots[j] - 1;
			break;
		}
	}
	if (idx < 0) {
		if (grow(m, (void **)&m->f, &m->fcap, m->nf + 1, sizeof *m->f))
			return -1;
		struct frame *e = &m->f[m->nf];
		memset(e, 0, sizeof *e);
		if (arena_add(m, f->filename, f->filename_len, &e->file_off) ||
		    arena_add(m, f->name, f->name_len, &e->name_off))
			return -1;
		e->hash = h;
		e->line = f->line;
		e->file_len = (uint32_t)f->filename_len;
		e->name_len = (uint32_t)f->name_len;
		e->module = (uint8_t)frame_module(f);
		if (e->module == MOD_PYTHON)
			e->ip = GMT_PYFRAME_IP(++m->next_pyframe);
		else
			e->ip = MOD_BASE(e->module) + 16 * ++m->next_ip[e->module];
		m->cpp_frames |= e->module != MOD_PYTHON;
		m->fslots[j] = (uint32_t)(m->nf + 1);
		idx = (long)m->nf++;
	}
	if (f->shared) { /* keep the dict alive: its address names it from now on */
		if (grow(m, (void **)&m->held, &m->heldcap, m->nheld + 1, sizeof *m->held) ||
		    map_put(&m->shared, (uint64_t)(uintptr_t)f->shared, (uint64_t)idx + 1))
			return nomem(m);
		pk_obj_ref(f->shared);
		m->held[m->nheld++] = f->shared;
	}
	return idx;
}

/* The frame's record (PYFRAME, or SYMBOL and its module's MODULE), once. */
static int frame_record(struct imp *m, size_t idx)
{
	struct frame *e = &m->f[idx];
	if (e->written == 1)
		return 0;
	e->written = 1;
	const char *file = m->arena + e->file_off, *name = m->arena + e->name_off;
	int rc;
	if (e->module == MOD_PYTHON) {
		rc = tw_pyframe(&m->w, GMT_PYFRAME_ID(e->ip), name, e->name_len, file, e->file_len,
				e->line);
	} else {
		if (!m->module_written[e->module]) {
			m->module_written[e->module] = true;
			if (tw_module(&m->w, (uint64_t)e->module, MOD_BASE(e->module),
				      MOD_BASE(e->module) + MOD_SIZE, module_path[e->module]))
				return write_failed(m);
		}
		rc = tw_symbol(&m->w, e->ip, (uint64_t)e->module, name, e->name_len, file,
			       e->file_len, e->line);
	}
	return rc ? write_failed(m) : 0;
}

/* Writes the records of the frames first used since the last call. */
static int flush_frames(struct imp *m)
{
	for (size_t i = 0; i < m->npending; i++)
		if (frame_record(m, m->pending[i]))
			return -1;
	m->npending = 0;
	return 0;
}

static uint64_t node_key(uint64_t parent, uint64_t ip)
{
	return (parent * 0x9e3779b97f4a7c15ull) ^ ip;
}

/* The stack node (parent, ip), made (and queued for writing) when new. */
static uint64_t node_intern(struct imp *m, uint64_t parent, uint64_t ip)
{
	uint64_t key = node_key(parent, ip);
	/* chained through the map: a key's slot holds the first node with
	 * that key; collisions go on at key + 1, key + 2... */
	for (uint64_t k = key;; k++) {
		uint64_t *v = map_find(&m->node_of, k);
		if (!v)
			break;
		size_t i = (size_t)*v - 1;
		if (m->node_parent[i] == parent && m->node_ip[i] == ip)
			return i + 1;
	}
	if (grow(m, (void **)&m->node_parent, &m->nodecap, m->nnodes + 1, 8))
		return 0;
	size_t cap = m->nodecap;
	void *p = realloc(m->node_ip, cap * 8);
	if (!p) {
		nomem(m);
		return 0;
	}
	m->node_ip = p;
	uint64_t id = tw_node(&m->w, parent, ip);
	if (!id) {
		write_failed(m);
		return 0;
	}
	m->node_parent[m->nnodes] = parent;
	m->node_ip[m->nnodes++] = ip;
	uint64_t k = key;
	while (map_find(&m->node_of, k))
		k++;
	if (map_put(&m->node_of, k, m->nnodes)) {
		nomem(m);
		return 0;
	}
	return id;
}

/* The stack of frame indices fr[0..n) (innermost first): its node id. */
static uint64_t stack_of_indices(struct imp *m, const size_t *fr, size_t n)
{
	uint64_t node = 0;
	for (size_t i = n; i-- > 0;) {
		struct frame *e = &m->f[fr[i]];
		if (!e->written) {
			if (grow(m, (void **)&m->pending, &m->pendcap, m->npending + 1,
				 sizeof *m->pending))
				return 0;
			m->pending[m->npending++] = fr[i];
			e->written = 2; /* queued */
		}
		node = node_intern(m, node, e->ip);
		if (!node)
			return 0;
	}
	return node;
}

/* A snapshot stack's node id (0 for no frames); *ok false on failure. */
static uint64_t stack_of(struct imp *m, const struct ts_stack *s, bool *ok)
{
	size_t idx[256], n = s->n < 256 ? s->n : 256; /* deeper frames: the outermost cut */
	*ok = true;
	for (size_t i = 0; i < n; i++) {
		long k = frame_intern(m, &s->f[i]);
		if (k < 0) {
			*ok = false;
			return 0;
		}
		idx[i] = (size_t)k;
	}
	uint64_t id = n ? stack_of_indices(m, idx, n) : 0;
	if (n && !id)
		*ok = false;
	return id;
}

/* ---- pass A: what the history holds, and what was there before it ---- */

static int add_before(struct imp *m, int64_t device, uint64_t address, uint64_t size,
		      bool expandable, const struct ts_stack *frames)
{
	if (grow(m, (void **)&m->before, &m->beforecap, m->nbefore + 1, sizeof *m->before))
		return -1;
	struct before *b = &m->before[m->nbefore++];
	*b = (struct before){.device = device,
			     .address = address,
			     .size = size,
			     .expandable = expandable,
			     .frames_off = m->nbframes};
	size_t n = frames ? (frames->n < 256 ? frames->n : 256) : 0;
	if (grow(m, (void **)&m->bframes, &m->bframecap, m->nbframes + n, sizeof *m->bframes))
		return -1;
	for (size_t i = 0; i < n; i++) {
		long k = frame_intern(m, &frames->f[i]);
		if (k < 0)
			return -1;
		m->bframes[m->nbframes++] = (size_t)k;
	}
	b->nframes = n;
	return 0;
}

/* A stack's frames into the frame-index pool: where they start. */
static int pool_frames(struct imp *m, const struct ts_stack *st, size_t *off, size_t *n)
{
	*off = m->nbframes;
	*n = st->n < 256 ? st->n : 256;
	if (grow(m, (void **)&m->bframes, &m->bframecap, m->nbframes + *n, sizeof *m->bframes))
		return -1;
	for (size_t i = 0; i < *n; i++) {
		long k = frame_intern(m, &st->f[i]);
		if (k < 0)
			return -1;
		m->bframes[m->nbframes++] = (size_t)k;
	}
	m->any_frames |= *n > 0;
	return 0;
}

/* The segment, whole, for its FWSEG record. */
static int keep_segment(struct imp *m, const struct ts_segment *g)
{
	if (grow(m, (void **)&m->fsegs, &m->fsegcap, m->nfsegs + 1, sizeof *m->fsegs) ||
	    grow(m, (void **)&m->fblks, &m->fblkcap, m->nfblks + g->nblocks, sizeof *m->fblks))
		return -1;
	struct fseg *f = &m->fsegs[m->nfsegs++];
	*f = (struct fseg){.device = g->device,
			   .addr = g->address,
			   .size = g->total_size,
			   .stream = g->stream,
			   .pool_a = g->pool_a,
			   .pool_b = g->pool_b,
			   .flags = (g->expandable ? GMT_FWSEG_EXPANDABLE : 0) |
				    (g->small ? GMT_FWSEG_SMALL : 0),
			   .first_block = m->nfblks,
			   .nblocks = g->nblocks};
	if (pool_frames(m, &g->frames, &f->frames_off, &f->nframes))
		return -1;
	for (size_t i = 0; i < g->nblocks; i++) {
		const struct ts_block *b = &g->blocks[i];
		struct fblk *o = &m->fblks[m->nfblks++];
		*o = (struct fblk){
		    b->address,		b->size, b->has_requested ? b->requested_size : 0,
		    (uint32_t)b->state, 0,	 0};
		if (pool_frames(m, &b->frames, &o->frames_off, &o->nframes))
			return -1;
	}
	return 0;
}

/* Subtracts [a, b) from the ranges of s; calls back (when before is not
 * NULL) for each part of it that no range covered. */
static int pieces_cut(struct imp *m, struct pieces *s, uint64_t a, uint64_t b, int64_t device,
		      bool record_uncovered)
{
	size_t i = pieces_first(s, a);
	uint64_t at = a;
	while (at < b) {
		if (i >= s->n || s->v[i].start >= b) {
			if (record_uncovered && add_before(m, device, at, b - at, true, NULL))
				return -1;
			break;
		}
		struct piece p = s->v[i];
		if (p.start > at) {
			if (record_uncovered && add_before(m, device, at, p.start - at, true, NULL))
				return -1;
			at = p.start;
		}
		uint64_t cut_end = p.end < b ? p.end : b;
		pieces_remove(s, i);
		if (p.start < a && pieces_insert(s, i++, (struct piece){p.start, a, p.handle}))
			return nomem(m);
		if (p.end > b && pieces_insert(s, i++, (struct piece){b, p.end, p.handle}))
			return nomem(m);
		at = cut_end;
	}
	return 0;
}

/* Adds [a, b) to s where s does not cover it yet. */
static int pieces_add(struct imp *m, struct pieces *s, uint64_t a, uint64_t b, uint64_t handle)
{
	size_t i = pieces_first(s, a);
	uint64_t at = a;
	while (at < b) {
		uint64_t next = i < s->n && s->v[i].start < b ? s->v[i].start : b;
		if (next > at && pieces_insert(s, i++, (struct piece){at, next, handle}))
			return nomem(m);
		if (next >= b)
			break;
		at = s->v[i].end;
		i++;
	}
	return 0;
}

static int learn_entry(struct imp *m, const struct ts_entry *e)
{
	struct dev *d = dev_get(m, e->device);
	if (!d)
		return -1;
	m->entries++;
	d->entries++;
	if (e->has_time) {
		uint64_t t = e->time_us * US;
		if (!d->timed || t < d->first_ns)
			d->first_ns = t;
		if (t > d->last_ns)
			d->last_ns = t;
		d->timed++;
	}
	uint64_t end = e->addr + e->size < e->addr ? UINT64_MAX : e->addr + e->size;
	switch (e->action) {
	case TS_SEGMENT_ALLOC:
		m->segment_events++;
		return map_put(&d->live, e->addr, e->size) ? nomem(m) : 0;
	case TS_SEGMENT_FREE:
		m->segment_events++;
		if (map_del(&d->live, e->addr))
			return 0;
		/* freed, never allocated in the history: reserved before it */
		return add_before(m, e->device, e->addr, e->size, false, NULL);
	case TS_SEGMENT_MAP:
		m->segment_events++;
		return pieces_add(m, &d->mapped_in, e->addr, end, 0);
	case TS_SEGMENT_UNMAP:
		m->segment_events++;
		return pieces_cut(m, &d->mapped_in, e->addr, end, e->device, true);
	default:
		return 0;
	}
}

/* A segment at the snapshot's end: reserved before the history when the
 * history did not make it (memory_viz's rule). */
static int learn_segment(struct imp *m, const struct ts_segment *g)
{
	struct dev *d = dev_get(m, g->device);
	if (!d)
		return -1;
	m->segments++;
	if (keep_segment(m, g))
		return -1;
	/* the end state is known only after the entries: keep what is needed */
	if (g->expandable) {
		/* the parts of it the history did not map: checked after pass A */
		return add_before(m, g->device, g->address, g->total_size, true, &g->frames);
	}
	return add_before(m, g->device, g->address, g->total_size, false, &g->frames);
}

static int learn_settings(struct imp *m, const struct ts_settings *st)
{
	for (size_t i = 0; st->dict && i + 1 < pk_len(st->dict) && m->nset < FW_SETTINGS; i += 2) {
		char k[128], v[512];
		pk_text(pk_item(st->dict, i), k, sizeof k);
		pk_text(pk_item(st->dict, i + 1), v, sizeof v);
		if (!(m->set_key[m->nset] = strdup(k)) || !(m->set_val[m->nset] = strdup(v)))
			return nomem(m);
		m->nset++;
	}
	m->have_settings = true;
	free(m->conf);
	m->conf = st->conf ? strdup(st->conf) : NULL;
	return st->conf && !m->conf ? nomem(m) : 0;
}

/* After the pass: the end segments the history made are not "before";
 * an expandable one keeps only what the history did not map. */
static int settle_before(struct imp *m, size_t end_first, size_t end_n)
{
	/* the end segments were read first (segments precede device_traces) */
	struct before *keep = NULL;
	size_t nkeep = 0, cap = 0;
	for (size_t i = 0; i < m->nbefore; i++) {
		struct before b = m->before[i];
		bool end_seg = i >= end_first && i < end_first + end_n;
		struct dev *d = &m->dev[b.device];
		if (end_seg && !b.expandable && map_find(&d->live, b.address))
			continue; /* the history allocated it */
		if (end_seg && b.expandable) {
			/* the parts the history's maps do not cover */
			size_t j = pieces_first(&d->mapped_in, b.address);
			uint64_t at = b.address, e = b.address + b.size;
			while (at < e) {
				uint64_t next = j < d->mapped_in.n && d->mapped_in.v[j].start < e
						    ? d->mapped_in.v[j].start
						    : e;
				if (next > at) {
					if (grow(m, (void **)&keep, &cap, nkeep + 1, sizeof *keep))
						return -1;
					struct before part = b;
					part.address = at;
					part.size = next - at;
					keep[nkeep++] = part;
				}
				if (next >= e)
					break;
				at = d->mapped_in.v[j++].end;
			}
			continue;
		}
		if (grow(m, (void **)&keep, &cap, nkeep + 1, sizeof *keep))
			return -1;
		keep[nkeep++] = b;
	}
	pk_budget_discharge((uint64_t)m->beforecap * sizeof *m->before);
	free(m->before);
	m->before = keep;
	m->nbefore = nkeep;
	m->beforecap = cap;
	return 0;
}

static int pass_a(struct imp *m)
{
	const struct ts_item *it;
	int rc;
	size_t end_first = 0, end_n = 0;
	bool segs_done = false;
	while ((rc = ts_next(m->ts, &it)) > 0) {
		switch (it->kind) {
		case TS_ITEM_SEGMENT:
			if (segs_done)
				return fail(m, PK_ERR_MALFORMED,
					    "not a PyTorch memory snapshot: segments after the "
					    "trace entries");
			if (!end_n)
				end_first = m->nbefore;
			end_n++;
			rc = learn_segment(m, &it->seg);
			break;
		case TS_ITEM_ENTRY:
			segs_done = true;
			rc = learn_entry(m, &it->entry);
			break;
		case TS_ITEM_SETTINGS:
			rc = learn_settings(m, &it->settings);
			break;
		case TS_ITEM_ANNOTATION:
			m->annotations++;
			rc = 0;
			break;
		}
		if (rc)
			return -1;
	}
	if (rc < 0)
		return from_ts(m, m->ts);
	/* the frees the history saw of segments it had not made were added as
	 * found, after the end segments: those stay as they are */
	if (settle_before(m, end_first, end_n))
		return -1;
	/* times: the earliest first entry is the trace's start */
	bool any = false;
	for (int64_t i = 0; i < m->ndev; i++) {
		struct dev *d = &m->dev[i];
		m->some_time |= d->timed > 0;
		if (d->timed && (!any || d->first_ns < m->t_start))
			m->t_start = d->first_ns;
		any |= d->timed > 0;
		map_free(&d->live);
		pieces_free(&d->mapped_in);
	}
	m->no_time = m->entries && !m->some_time;
	if (!any)
		m->t_start = US; /* no times: entries 1 us apart from here */
	/* the snapshot was taken after the history's last entry */
	m->t_snap = m->t_start;
	for (int64_t i = 0; i < m->ndev; i++) {
		struct dev *d = &m->dev[i];
		uint64_t last =
		    d->timed ? d->last_ns : m->t_start + (d->entries ? d->entries - 1 : 0) * US;
		if (last > m->t_snap)
			m->t_snap = last;
	}
	return 0;
}

/* ---- pass B: the trace ---- */

static int event(struct imp *m, uint64_t t, uint32_t api, int64_t device, uint64_t ptr,
		 uint64_t size, uint64_t stack, bool has_aux, uint64_t aux, bool has_aux2,
		 uint64_t aux2)
{
	struct tw_event e = {.time_ns = t,
			     .tid = TID,
			     .api = api,
			     .device = device,
			     .ptr = ptr,
			     .size = size,
			     .stack = stack,
			     .has_aux = has_aux,
			     .aux = aux,
			     .has_aux2 = has_aux2,
			     .aux2 = aux2};
	if (m->npending > 4096 && flush_frames(m))
		return -1;
	return tw_event(&m->w, &e) ? write_failed(m) : 0;
}

/* Maps [a, b) where nothing is mapped yet: a handle per piece. */
static int map_range(struct imp *m, struct dev *d, int64_t device, uint64_t t, uint64_t a,
		     uint64_t b, uint64_t stack)
{
	size_t i = pieces_first(&d->mapped, a);
	uint64_t at = a;
	while (at < b) {
		uint64_t next =
		    i < d->mapped.n && d->mapped.v[i].start < b ? d->mapped.v[i].start : b;
		if (next > at) {
			uint64_t h = ++m->next_handle;
			if (pieces_insert(&d->mapped, i++, (struct piece){at, next, h}))
				return nomem(m);
			if (event(m, t, GMT_API_cuMemCreate, device, h, next - at, stack, true, 1,
				  false, 0) ||
			    event(m, t, GMT_API_cuMemMap, device, at, next - at, stack, true, h,
				  true, 0))
				return -1;
		}
		if (next >= b)
			break;
		at = d->mapped.v[i].end;
		i++;
	}
	return 0;
}

/* Unmaps [a, b): each piece it touches is unmapped and released, and what
 * of the piece lies outside [a, b) mapped again with a handle of its own. */
static int unmap_range(struct imp *m, struct dev *d, int64_t device, uint64_t t, uint64_t a,
		       uint64_t b, uint64_t stack)
{
	size_t i = pieces_first(&d->mapped, a);
	while (i < d->mapped.n && d->mapped.v[i].start < b) {
		struct piece p = d->mapped.v[i];
		pieces_remove(&d->mapped, i);
		if (event(m, t, GMT_API_cuMemUnmap, device, p.start, p.end - p.start, stack, false,
			  0, false, 0) ||
		    event(m, t, GMT_API_cuMemRelease, device, p.handle, 0, stack, false, 0, false,
			  0))
			return -1;
		if (p.start < a && map_range(m, d, device, t, p.start, a, stack))
			return -1;
		if (p.end > b && map_range(m, d, device, t, b, p.end, stack))
			return -1;
		i = pieces_first(&d->mapped, b);
	}
	return 0;
}

static int emit_before(struct imp *m)
{
	if (!m->nbefore)
		return 0;
	if (!m->before_stack) { /* a frame that says where these come from */
		struct ts_frame f = {.filename = "",
				     .name = "[reserved before the history began]",
				     .filename_len = 0,
				     .name_len = strlen("[reserved before the history began]")};
		long k =
		    frame_intern(m, &f); /* no file: a PYFRAME like "[thread runs no Python]" */
		if (k < 0)
			return -1;
		size_t idx = (size_t)k;
		if (!(m->before_stack = stack_of_indices(m, &idx, 1)))
			return -1;
	}
	for (size_t i = 0; i < m->nbefore; i++) {
		const struct before *b = &m->before[i];
		struct dev *d = dev_get(m, b->device);
		uint64_t stack = b->nframes
				     ? stack_of_indices(m, m->bframes + b->frames_off, b->nframes)
				     : m->before_stack;
		if (!d || !stack)
			return -1;
		if (b->expandable) {
			if (map_range(m, d, b->device, m->t_start, b->address, b->address + b->size,
				      stack))
				return -1;
		} else if (event(m, m->t_start, GMT_API_cudaMalloc, b->device, b->address, b->size,
				 stack, false, 0, false, 0)) {
			return -1;
		}
	}
	return 0;
}

/* The device's waiting history entries as one FWTRACE record. */
static int fw_flush(struct imp *m, int64_t device)
{
	struct dev *d = &m->dev[device];
	if (!d->nfw)
		return 0;
	uint8_t *p = tw_end_batch(&m->w)
			 ? NULL
			 : tw_room(&m->w, GMT_FW_TRACE_HEAD_MAX + d->nfw * GMT_FW_ENTRY_MAX);
	if (!p)
		return write_failed(m);
	struct gmt_fw_enc st;
	p = gmt_fw_put_trace_head(p, &st, FW_SEQ, device, 0, d->fw[0].time_us, d->nfw);
	for (size_t i = 0; i < d->nfw; i++) {
		const struct gmt_fw_entry *e = &d->fw[i];
		p = gmt_fw_put_entry(p, &st, e->action, e->addr, e->size, e->stream, e->time_us,
				     e->stack_id);
	}
	tw_commit(&m->w, p);
	d->nfw = 0;
	return 0;
}

/* One history entry for the device's FWTRACE records (actions are the
 * snapshot's, numbered alike: GMT_FW_*). */
static int fw_entry(struct imp *m, struct dev *d, const struct ts_entry *e, uint64_t stack)
{
	if (!d->fw && !(d->fw = malloc(FW_BATCH * sizeof *d->fw)))
		return nomem(m);
	d->fw[d->nfw++] = (struct gmt_fw_entry){
	    .action = (uint32_t)e->action,
	    .addr = e->action == TS_OOM ? e->device_free : e->addr,
	    .size = e->size,
	    .stream = e->stream,
	    .time_us = e->has_time ? e->time_us : 0,
	    .stack_id = stack,
	};
	m->any_frames |= e->frames.n > 0;
	return d->nfw == FW_BATCH ? fw_flush(m, e->device) : 0;
}

static int emit_entry(struct imp *m, struct dev *d, const struct ts_entry *e, uint64_t t)
{
	bool ok;
	uint64_t stack = stack_of(m, &e->frames, &ok);
	if (!ok || fw_entry(m, d, e, stack))
		return -1;
	switch (e->action) {
	case TS_SEGMENT_ALLOC:
	case TS_SEGMENT_FREE:
	case TS_SEGMENT_MAP:
	case TS_SEGMENT_UNMAP:
		break;
	default: /* the tensors' own entries: their FWTRACE record only */
		return 0;
	}
	uint64_t end = e->addr + e->size < e->addr ? UINT64_MAX : e->addr + e->size;
	switch (e->action) {
	case TS_SEGMENT_ALLOC:
		return event(m, t, GMT_API_cudaMalloc, e->device, e->addr, e->size, stack, false, 0,
			     false, 0);
	case TS_SEGMENT_FREE:
		return event(m, t, GMT_API_cudaFree, e->device, e->addr, 0, stack, false, 0, false,
			     0);
	case TS_SEGMENT_MAP:
		return map_range(m, d, e->device, t, e->addr, end, stack);
	default:
		return unmap_range(m, d, e->device, t, e->addr, end, stack);
	}
}

/* torch 2.14's user metadata: the string _set_memory_metadata puts on the
 * thread's entries opens a range (a phase, as an annotation's) until it
 * changes; an annotate entry (_annotate_tensor) is a mark naming the
 * tensor's address. Cut at META_MAX bytes. */
static int emit_metadata(struct imp *m, const struct ts_entry *e, uint64_t t)
{
	const char *md = e->user_metadata ? e->user_metadata : "";
	char name[META_MAX + 48];
	if (e->annotate) {
		if (!*md)
			return 0;
		snprintf(name, sizeof name, "annotate 0x%" PRIx64 ": %.*s", e->addr, META_MAX, md);
		if (flush_frames(m) ||
		    tw_range(&m->w, TID, t, GMT_RANGE_MARK, 0, GMT_RANGE_SRC_API, name))
			return m->err->code ? -1 : write_failed(m);
		return 0;
	}
	if (!strncmp(md, m->meta, META_MAX))
		return 0;
	if (flush_frames(m))
		return m->err->code ? -1 : write_failed(m);
	if (m->meta[0] && tw_range(&m->w, TID, t, GMT_RANGE_END, m->meta_id, GMT_RANGE_SRC_API, ""))
		return write_failed(m);
	snprintf(m->meta, sizeof m->meta, "%.*s", META_MAX, md);
	if (m->meta[0] && tw_range(&m->w, TID, t, GMT_RANGE_START, m->meta_id = ++m->range_id,
				   GMT_RANGE_SRC_API, m->meta))
		return write_failed(m);
	return 0;
}

static int emit_annotation(struct imp *m, const struct ts_annotation *a)
{
	if (!a->has_time || !a->name || !a->stage)
		return 0;
	uint64_t t = a->time_us * US < m->t_start ? m->t_start : a->time_us * US;
	uint64_t key = hash_bytes(0xcbf29ce484222325ull, a->name, strlen(a->name));
	uint64_t *open = map_find(&m->open_range, key);
	if (!strcmp(a->stage, "START")) {
		if (map_put(&m->open_range, key, ++m->range_id))
			return nomem(m);
		if (flush_frames(m) || tw_range(&m->w, TID, t, GMT_RANGE_START, m->range_id,
						GMT_RANGE_SRC_API, a->name))
			return m->err->code ? -1 : write_failed(m);
		return 0;
	}
	if (strcmp(a->stage, "END") || !open || !*open)
		return 0;
	uint64_t id = *open;
	*open = 0;
	if (flush_frames(m) || tw_range(&m->w, TID, t, GMT_RANGE_END, id, GMT_RANGE_SRC_API, ""))
		return m->err->code ? -1 : write_failed(m);
	return 0;
}

/* The next entry of device d's cursor into d->item (NULL at its end), and
 * its time in d->t. Non-entry items on the way: annotations are written
 * (by the first cursor only). */
static int advance(struct imp *m, struct dev *d, bool first)
{
	const struct ts_item *it;
	int rc;
	d->item = NULL;
	while ((rc = ts_next(d->cur, &it)) > 0) {
		if (it->kind == TS_ITEM_ANNOTATION && first) {
			if (emit_annotation(m, &it->ann))
				return -1;
			continue;
		}
		if (it->kind != TS_ITEM_ENTRY)
			continue;
		const struct ts_entry *e = &it->entry;
		uint64_t t = e->has_time ? e->time_us * US : 0;
		if (!d->t_prev)
			t = t ? t : m->t_start;
		else if (!e->has_time)
			t = d->t_prev + (m->no_time ? US : 1);
		else if (t <= d->t_prev) /* equal stamps (us): kept in order, 1 ns apart */
			t = d->t_prev + 1;
		d->t = d->t_prev = t;
		d->item = it;
		return 0;
	}
	if (rc < 0)
		return from_ts(m, d->cur);
	d->done = true;
	return 0;
}

static int open_cursors(struct imp *m, int64_t *devs, size_t *ndevs)
{
	*ndevs = 0;
	for (int64_t i = 0; i < m->ndev; i++) {
		struct dev *d = &m->dev[i];
		if (!d->entries)
			continue;
		if (*ndevs == MAX_TRACED_DEVICES)
			return fail(m, PK_ERR_LIMIT, "more than %d devices with a history",
				    MAX_TRACED_DEVICES);
		if (!*ndevs) {
			ts_rewind(m->ts);
			d->cur = m->ts;
		} else if (!(d->cur = ts_open(m->in_fd, m->in_size, m->err))) {
			return -1;
		}
		ts_only_device(d->cur, i);
		devs[(*ndevs)++] = i;
	}
	return 0;
}

static int emit_entries(struct imp *m)
{
	int64_t *devs = calloc((size_t)(m->ndev ? m->ndev : 1), sizeof *devs);
	size_t n;
	if (!devs)
		return nomem(m);
	int rc = open_cursors(m, devs, &n);
	for (size_t i = 0; !rc && i < n; i++)
		rc = advance(m, &m->dev[devs[i]], i == 0);
	while (!rc) {
		struct dev *best = NULL;
		for (size_t i = 0; i < n; i++) {
			struct dev *d = &m->dev[devs[i]];
			if (d->item && (!best || d->t < best->t))
				best = d;
		}
		if (!best)
			break;
		if (best->t > m->t_end)
			m->t_end = best->t;
		rc = emit_metadata(m, &best->item->entry, best->t);
		if (!rc)
			rc = emit_entry(m, best, &best->item->entry, best->t);
		if (!rc)
			rc = advance(m, best, best == &m->dev[devs[0]]);
	}
	/* the metadata in force at the end: its range ends with the history */
	if (!rc && m->meta[0]) {
		m->meta[0] = '\0';
		if (flush_frames(m) || tw_range(&m->w, TID, m->t_end, GMT_RANGE_END, m->meta_id,
						GMT_RANGE_SRC_API, ""))
			rc = m->err->code ? -1 : write_failed(m);
	}
	for (size_t i = 1; i < n; i++) {
		ts_close(m->dev[devs[i]].cur);
		m->dev[devs[i]].cur = NULL;
	}
	for (size_t i = 0; !rc && i < n; i++)
		rc = fw_flush(m, devs[i]);
	free(devs);
	return rc;
}

/* The snapshot: FWSNAP, its settings as the framework-history helper writes
 * them (key and value as text). */
static int write_fwsnap(struct imp *m)
{
	size_t need = GMT_FW_SNAP_HEAD_MAX + 8;
	for (size_t i = 0; i < m->nset; i++)
		need += strlen(m->set_key[i]) + strlen(m->set_val[i]) + 2 * GMT_VARINT_MAX;
	uint8_t *p = tw_end_batch(&m->w) ? NULL : tw_room(&m->w, need);
	if (!p)
		return write_failed(m);
	unsigned flags =
	    (m->entries ? GMT_FWSNAP_HISTORY : 0) | (m->any_frames ? GMT_FWSNAP_PY_STACKS : 0) |
	    (m->cpp_frames ? GMT_FWSNAP_CPP_STACKS : 0) | (m->no_time ? GMT_FWSNAP_NO_TIME : 0);
	p = gmt_fw_put_snap_head(p, TID, m->t_snap, m->t_snap, FW_SEQ, GMT_FWSNAP_WHY_IMPORT,
				 "torch", 5, flags, 0, m->nset);
	for (size_t i = 0; i < m->nset; i++)
		p = gmt_fw_put_setting(p, m->set_key[i], strlen(m->set_key[i]), m->set_val[i],
				       strlen(m->set_val[i]));
	tw_commit(&m->w, p);
	return 0;
}

/* The segments at the snapshot's end, with their blocks: FWSEG records
 * (a segment of more blocks than a record takes continues in the next). */
static int write_fwsegs(struct imp *m)
{
	for (size_t i = 0; i < m->nfsegs; i++) {
		const struct fseg *f = &m->fsegs[i];
		uint64_t stack =
		    f->nframes ? stack_of_indices(m, m->bframes + f->frames_off, f->nframes) : 0;
		size_t done = 0;
		do {
			size_t n = f->nblocks - done < GMT_FW_BATCH_MAX ? f->nblocks - done
									: GMT_FW_BATCH_MAX;
			uint64_t *stacks = n ? malloc(n * sizeof *stacks) : NULL;
			if (n && !stacks)
				return nomem(m);
			for (size_t k = 0; k < n; k++) {
				const struct fblk *b = &m->fblks[f->first_block + done + k];
				stacks[k] = b->nframes
						? stack_of_indices(m, m->bframes + b->frames_off,
								   b->nframes)
						: 0;
			}
			if (m->err->code) {
				free(stacks);
				return -1;
			}
			uint8_t *p =
			    tw_end_batch(&m->w)
				? NULL
				: tw_room(&m->w, GMT_FW_SEG_HEAD_MAX + n * GMT_FW_BLOCK_MAX);
			if (!p) {
				free(stacks);
				return write_failed(m);
			}
			struct gmt_fw_enc st;
			p = gmt_fw_put_seg_head(p, &st, FW_SEQ, f->device, f->addr, f->size,
						f->stream,
						f->flags | (done ? GMT_FWSEG_CONTINUED : 0),
						f->pool_a, f->pool_b, stack, n);
			for (size_t k = 0; k < n; k++) {
				const struct fblk *b = &m->fblks[f->first_block + done + k];
				p = gmt_fw_put_block(p, &st, b->addr, b->size, b->req, b->state,
						     stacks[k]);
			}
			tw_commit(&m->w, p);
			free(stacks);
			done += n;
		} while (done < f->nblocks);
	}
	return 0;
}

static void fmt_bytes(char *buf, size_t size, uint64_t b)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

static int write_head(struct imp *m, const char *name)
{
	const char *argv[1] = {name};
	const char *keys[1] = {"PYTORCH_CUDA_ALLOC_CONF"}, *values[1] = {m->conf};
	bool conf = m->conf && *m->conf; /* unset: nothing recorded, as for a traced run */
	if (tw_process(&m->w, 0, m->t_start, "", "", 1, argv, conf ? 1 : 0, keys, values))
		return write_failed(m);
	for (int64_t i = 0; i < m->ndev; i++)
		if (m->dev[i].seen && tw_device(&m->w, i, "", NULL, 0))
			return write_failed(m);
	char text[512], bytes[32];
	snprintf(text, sizeof text,
		 "PyTorch memory snapshot (pickle protocol %d): %" PRIu64
		 " segment%s at its end, %" PRIu64 " history entr%s%s; segments read as "
		 "cudaMalloc/cudaFree (expandable ones as cuMemCreate+cuMemMap/"
		 "cuMemUnmap+cuMemRelease)",
		 ts_protocol(m->ts), m->segments, m->segments == 1 ? "" : "s", m->entries,
		 m->entries == 1 ? "y" : "ies",
		 m->entries ? ""
			    : " (recorded without _record_memory_history: its end state only)");
	if (tw_note(&m->w, 0, text))
		return write_failed(m);
	if (m->nbefore && m->entries) { /* no history: the end state is all there is */
		uint64_t total = 0;
		for (size_t i = 0; i < m->nbefore; i++)
			total += m->before[i].size;
		fmt_bytes(bytes, sizeof bytes, total);
		snprintf(text, sizeof text,
			 "the history starts mid-run (PyTorch keeps the last max_entries, or "
			 "recording began late): %zu segment%s (%s) %s reserved before its first "
			 "entry; %s placed at its start",
			 m->nbefore, m->nbefore == 1 ? "" : "s", bytes,
			 m->nbefore == 1 ? "was" : "were", m->nbefore == 1 ? "it is" : "they are");
		if (tw_note(&m->w, 1, text))
			return write_failed(m);
	}
	if (m->no_time &&
	    tw_note(&m->w, 1,
		    "the snapshot's entries carry no time_us (an older PyTorch): they "
		    "are placed 1 us apart, in order; times and durations are not real"))
		return write_failed(m);
	if (!m->have_settings && m->entries &&
	    tw_note(&m->w, 0, "the snapshot has no allocator_settings (an older PyTorch)"))
		return write_failed(m);
	return 0;
}

static int run(struct imp *m, int out_fd, const char *name, bool compress)
{
	if (pass_a(m))
		return -1;
	struct tw_header h = {
	    .start_wall_ns = m->t_start, .start_mono_ns = m->t_start, .stacks = true};
	m->t_end = m->t_start;
	if (tw_open(&m->w, out_fd, &h, compress) || write_head(m, name))
		return m->err->code ? -1 : write_failed(m);
	if (write_fwsnap(m) || emit_before(m) || emit_entries(m) || write_fwsegs(m) ||
	    flush_frames(m))
		return -1;
	if (tw_trailer(&m->w, m->t_end, 0, GMT_END_EXIT) || tw_close(&m->w))
		return write_failed(m);
	return 0;
}

static void cleanup(struct imp *m)
{
	tw_abandon(&m->w);
	for (size_t i = 0; i < m->nheld; i++)
		pk_obj_unref(m->held[i]);
	for (int64_t i = 0; i < m->ndev; i++) {
		map_free(&m->dev[i].live);
		pieces_free(&m->dev[i].mapped_in);
		pieces_free(&m->dev[i].mapped);
	}
	for (int64_t i = 0; i < m->ndev; i++)
		free(m->dev[i].fw);
	for (size_t i = 0; i < m->nset; i++) {
		free(m->set_key[i]);
		free(m->set_val[i]);
	}
	pk_budget_discharge((uint64_t)m->fsegcap * sizeof *m->fsegs +
			    (uint64_t)m->fblkcap * sizeof *m->fblks);
	free(m->fsegs);
	free(m->fblks);
	map_free(&m->shared);
	map_free(&m->node_of);
	map_free(&m->open_range);
	pk_budget_discharge((uint64_t)m->fcap * sizeof *m->f + m->acap + (uint64_t)m->nfslots * 4 +
			    (uint64_t)m->heldcap * sizeof *m->held +
			    (uint64_t)m->pendcap * sizeof *m->pending + (uint64_t)m->nodecap * 8 +
			    (uint64_t)m->beforecap * sizeof *m->before +
			    (uint64_t)m->bframecap * sizeof *m->bframes);
	free(m->dev);
	free(m->f);
	free(m->fslots);
	free(m->arena);
	free(m->held);
	free(m->pending);
	free(m->node_parent);
	free(m->node_ip);
	free(m->before);
	free(m->bframes);
	free(m->conf);
	ts_close(m->ts);
}

int snap_import(int in_fd, uint64_t in_size, int out_fd, const char *name, bool compress,
		struct pk_error *err)
{
	struct imp m = {.in_fd = in_fd, .in_size = in_size, .err = err};
	memset(err, 0, sizeof *err);
	m.ts = ts_open(in_fd, in_size, err);
	if (!m.ts)
		return -1;
	int rc = run(&m, out_fd, name, compress);
	cleanup(&m);
	return rc;
}
