/* A restricted, streaming unpickler: only the data subset that PyTorch's
 * torch.cuda.memory._dump_snapshot writes (Python's pickle, protocols 2 to
 * 5): dicts, lists, tuples, str, bytes, ints of every width (LONG1's 9-byte
 * ints included), floats, bools, None, the memo and protocol 4's frames.
 * Every other opcode (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ,
 * NEWOBJ, PERSID, EXT*, sets, buffers, protocol 0's text forms) is refused
 * with one line: nothing is ever imported or run.
 *
 *     struct pk_error err;
 *     struct pk *p = pk_open(fd, size, classify, ctx, &err);
 *     const struct pk_item *it;
 *     while ((rc = pk_next(p, &it)) > 0) { ... it->v ... }   // rc -1: pk_error(p)
 *     pk_close(p);
 *
 * Two passes over the file. The first walks the opcodes only: it refuses
 * what is outside the subset, finds a truncated file, and notes which memo
 * entries are ever fetched again. The second builds values, keeping in the
 * memo only those: a snapshot's shared objects (its frames, their strings,
 * the dict keys), never its million trace entries. A container the consumer
 * asks to stream (classify) hands each item out through pk_next as it is
 * attached and keeps none, so memory is bounded by the shared objects and
 * one batch of items (the pickler's 1,000), not by the file's size. Everything held is counted
 * against a budget (GPUMEMTRACE_PICKLE_MAX_MB, default 2048); nesting is
 * at most PK_MAX_DEPTH deep. A container is sealed once it is attached or
 * fetched from the memo, and a sealed one never changes: no cycles.
 *
 * An item's values live until the next pk_next; pk_ref keeps one. */
#ifndef GMT_READER_PICKLE_H
#define GMT_READER_PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PK_MAX_DEPTH  64	  /* containers inside containers */
#define PK_MAX_STRING (64u << 20) /* one str or bytes */

enum pk_kind {
	PK_NONE = 0,
	PK_BOOL,   /* i: 0 or 1 */
	PK_INT,	   /* i */
	PK_UINT,   /* u: 2^63 .. 2^64-1 (LONG1's 9-byte ints) */
	PK_BIGINT, /* beyond 64 bits: i is -1 or 1 (its sign), no value */
	PK_FLOAT,  /* f */
	PK_STR,	   /* o: UTF-8 bytes as written */
	PK_BYTES,  /* o */
	PK_LIST,   /* o */
	PK_TUPLE,  /* o */
	PK_DICT,   /* o: v[2k] key, v[2k+1] value, in insertion order */
	PK_MARK_,  /* internal */
};

struct pk_obj;
struct pk_val {
	uint8_t kind;
	union {
		int64_t i;
		uint64_t u;
		double f;
		struct pk_obj *o;
	};
};

struct pk_obj {
	uint32_t refs;
	uint8_t kind;
	uint8_t sealed;
	uint8_t depth;	  /* 1 + the deepest container inside */
	uint8_t streamed; /* its items go out through pk_next: n stays 0 */
	uint32_t cls;	  /* classify's answer */
	size_t n, cap;	  /* str/bytes: bytes; containers: values (a dict: 2 per item) */
	uint64_t items;	  /* a streamed container: items handed out so far */
	union {
		char *s; /* NUL-terminated */
		struct pk_val *v;
	};
};

/* Classes: what classify returns. PK_CLS_STREAM set: stream the
 * container's items. The rest of the bits are the consumer's. */
#define PK_CLS_STREAM 0x80000000u
#define PK_CLS_ROOT   ((uint32_t)-1) /* the parent of the outermost container */

/* A list or dict is made. Where it will go, as far as the stack shows: in a
 * container of class parent_cls (PK_CLS_ROOT for the outermost), under key
 * (a dict's) or at index (a list's; key NULL). parent_cls 0 and key NULL
 * when unknown. Returns its class. */
typedef uint32_t (*pk_classify_fn)(void *ctx, uint32_t parent_cls, const struct pk_val *key,
				   uint64_t index, enum pk_kind kind);

/* An item of a streamed container of class cls (PK_CLS_STREAM cleared): a
 * dict's key and value, or a list's index (key PK_NONE) and value. */
struct pk_item {
	uint32_t cls;
	struct pk_val key;
	uint64_t index;
	struct pk_val v;
};

enum pk_err {
	PK_OK = 0,
	PK_ERR_IO = 1,	      /* read(2) failed */
	PK_ERR_REFUSED = 2,   /* an opcode outside the data subset */
	PK_ERR_TRUNCATED = 3, /* the file ends before STOP */
	PK_ERR_MALFORMED = 4, /* not valid pickle (stack, marks, memo, types) */
	PK_ERR_LIMIT = 5,     /* nesting, a length or the memory budget */
	PK_ERR_NOMEM = 6,
};

struct pk_error {
	enum pk_err code;
	uint64_t offset; /* of the opcode at fault */
	char msg[240];	 /* one line, no newline, no path */
};

/* 1: the bytes begin as a pickle of protocol 2 or later does (PROTO). */
bool pk_sniff(const uint8_t *p, size_t n);

struct pk;
/* Scans the pickle in fd (size bytes, read with pread): NULL, with *err,
 * when it is refused, truncated or malformed at the opcode level. */
struct pk *pk_open(int fd, uint64_t size, pk_classify_fn classify, void *ctx, struct pk_error *err);
/* The next streamed item: 1 (*out valid until the next call), 0 at the
 * pickle's STOP, -1 on an error (pk_error says it). */
int pk_next(struct pk *p, const struct pk_item **out);
/* Back to the start for another pass (the scan is not repeated). */
void pk_rewind(struct pk *p);
const struct pk_error *pk_error(const struct pk *p);
/* File offset of the opcode being run. */
uint64_t pk_offset(const struct pk *p);
/* The pickle's protocol (2 to 5). */
int pk_protocol(const struct pk *p);
void pk_close(struct pk *p);

/* Keeps a value beyond the next pk_next (containers and strings are shared). */
void pk_ref(const struct pk_val *v);
void pk_unref(struct pk_val *v);
void pk_obj_ref(struct pk_obj *o);
void pk_obj_unref(struct pk_obj *o);

/* The budget every pickle's values count against, for what a consumer
 * builds from them (its tables of frames and stacks): false, and nothing
 * charged, when bytes more would pass it. */
bool pk_budget_charge(uint64_t bytes);
void pk_budget_discharge(uint64_t bytes);
/* The budget, in bytes (GPUMEMTRACE_PICKLE_MAX_MB). */
uint64_t pk_budget(void);

/* Helpers for reading values. */
/* A dict's value under the ASCII key `key`, or NULL. The last one wins, as
 * in Python. */
const struct pk_val *pk_get(const struct pk_val *dict, const char *key);
/* A container's items: count and array (dict: 2 per item); 0 otherwise. */
size_t pk_len(const struct pk_val *v);
const struct pk_val *pk_item(const struct pk_val *v, size_t i);
/* An int as u64: true for PK_INT >= 0, PK_UINT and PK_BOOL. */
bool pk_u64(const struct pk_val *v, uint64_t *out);
/* An int as i64: true for PK_INT and PK_BOOL. */
bool pk_i64(const struct pk_val *v, int64_t *out);
/* A number as double (ints too). */
bool pk_num(const struct pk_val *v, double *out);
/* A str's bytes, or NULL (len set when not NULL). */
const char *pk_str(const struct pk_val *v, size_t *len);
bool pk_str_is(const struct pk_val *v, const char *s);
/* A value as text, the way Python's str() writes it, except that a dict is
 * "k:v,k:v" and a list or tuple "a,b" (the framework-history helper's form
 * of allocator settings); cut to fit buf. */
const char *pk_text(const struct pk_val *v, char *buf, size_t size);
const char *pk_kind_name(enum pk_kind k);

#endif
