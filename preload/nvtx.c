/* NVTX injection: the NVTX v3 loader in the program (header-only, so in
 * every library that annotates) dlopens NVTX_INJECTION64_PATH, calls its
 * InitializeInjectionNvtx2, and from then on calls the function pointers
 * the injection put in its tables. We fill the CORE and CORE2 modules'
 * marker and range slots and record each call as a RANGE.
 *
 * The declarations below are ours, written from NVIDIA's public NVTX
 * documentation of the injection interface; the numbers and layouts are
 * that ABI and must not change. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "preload/tracer.h"

#define GMT_EXPORT __attribute__((visibility("default")))

/* ---- the injection ABI ---------------------------------------------------- */

enum nvtx_export_table_id {
	NVTX_TABLE_CALLBACKS = 1,
	NVTX_TABLE_VERSION_INFO = 3,
};

enum nvtx_module {
	NVTX_MODULE_CORE = 1,
	NVTX_MODULE_CORE2 = 5,
};

enum nvtx_core_slot {
	CORE_MARK_EX = 1,
	CORE_MARK_A = 2,
	CORE_MARK_W = 3,
	CORE_RANGE_START_EX = 4,
	CORE_RANGE_START_A = 5,
	CORE_RANGE_START_W = 6,
	CORE_RANGE_END = 7,
	CORE_RANGE_PUSH_EX = 8,
	CORE_RANGE_PUSH_A = 9,
	CORE_RANGE_PUSH_W = 10,
	CORE_RANGE_POP = 11,
};

enum nvtx_core2_slot {
	CORE2_DOMAIN_MARK_EX = 1,
	CORE2_DOMAIN_RANGE_START_EX = 2,
	CORE2_DOMAIN_RANGE_END = 3,
	CORE2_DOMAIN_RANGE_PUSH_EX = 4,
	CORE2_DOMAIN_RANGE_POP = 5,
	CORE2_DOMAIN_REGISTER_STRING_A = 10,
	CORE2_DOMAIN_REGISTER_STRING_W = 11,
	CORE2_DOMAIN_CREATE_A = 12,
	CORE2_DOMAIN_CREATE_W = 13,
	CORE2_DOMAIN_DESTROY = 14,
};

typedef void (*nvtx_slot_fn)(void);
/* A module's table: entry i points at the loader's slot for callback i. */
typedef nvtx_slot_fn **nvtx_module_table;

struct nvtx_callbacks_table {
	size_t struct_size;
	int (*get_module_table)(int module, nvtx_module_table *table, unsigned *count);
};

struct nvtx_version_table {
	size_t struct_size;
	uint32_t version;
	uint32_t reserved;
	void (*set_injection_version)(uint32_t version);
};

typedef const void *(*nvtx_get_export_table_fn)(uint32_t table_id);
/* NVTX's loader finds it by name (below). */
GMT_EXPORT int InitializeInjectionNvtx2(nvtx_get_export_table_fn get_export_table);

enum nvtx_message_type {
	NVTX_MSG_ASCII = 1,
	NVTX_MSG_WIDE = 2,
	NVTX_MSG_REGISTERED = 3,
};

/* nvtxEventAttributes_t, versions 1 to 3 (the layout never changed). */
struct nvtx_event_attributes {
	uint16_t version;
	uint16_t size; /* bytes the caller filled in */
	uint32_t category;
	int32_t color_type;
	uint32_t color;
	int32_t payload_type;
	int32_t reserved;
	uint64_t payload;
	int32_t message_type;
	union {
		const char *ascii;
		const wchar_t *wide;
		const void *registered;
	} message;
};

/* ---- our domains and registered strings ------------------------------------ */

enum { IMPLEMENTED_NVTX_VERSION = 3 };

enum { TEXT_MAX = 1024, DOMAIN_MAGIC = 0x6e76646du, STRING_MAGIC = 0x6e767374u };

/* Handles we give out. They live until exit: NVTX cannot unregister a
 * string, and a destroyed domain's handle may still be in use elsewhere. */
struct gmt_nvtx_domain {
	uint32_t magic;
	struct gmt_nvtx_domain *next;
	char name[];
};
struct gmt_nvtx_string {
	uint32_t magic;
	char text[];
};

static pthread_mutex_t domains_lock = PTHREAD_MUTEX_INITIALIZER; /* creation only: rare */
static struct gmt_nvtx_domain *domains;
static uint64_t last_range_id;
static __thread int tls_depth __attribute__((tls_model("initial-exec")));

/* UTF-32 (Linux wchar_t) to UTF-8, cut at a character boundary. */
static void wide_to_utf8(const wchar_t *w, char *out, size_t cap)
{
	size_t o = 0;
	for (; w && *w; w++) {
		uint32_t c = (uint32_t)*w;
		char b[4];
		size_t n;
		if (c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
			c = 0xfffd;
		if (c < 0x80) {
			b[0] = (char)c;
			n = 1;
		} else if (c < 0x800) {
			b[0] = (char)(0xc0 | c >> 6);
			b[1] = (char)(0x80 | (c & 0x3f));
			n = 2;
		} else if (c < 0x10000) {
			b[0] = (char)(0xe0 | c >> 12);
			b[1] = (char)(0x80 | (c >> 6 & 0x3f));
			b[2] = (char)(0x80 | (c & 0x3f));
			n = 3;
		} else {
			b[0] = (char)(0xf0 | c >> 18);
			b[1] = (char)(0x80 | (c >> 12 & 0x3f));
			b[2] = (char)(0x80 | (c >> 6 & 0x3f));
			b[3] = (char)(0x80 | (c & 0x3f));
			n = 4;
		}
		if (o + n >= cap)
			break;
		memcpy(out + o, b, n);
		o += n;
	}
	out[o] = 0;
}

static void *new_handle(uint32_t magic, size_t header, const char *ascii, const wchar_t *wide)
{
	char buf[TEXT_MAX + 1];
	const char *text = ascii ? ascii : "";
	if (wide) {
		wide_to_utf8(wide, buf, sizeof buf);
		text = buf;
	}
	size_t n = strnlen(text, TEXT_MAX);
	uint32_t *h = malloc(header + n + 1);
	if (!h)
		return NULL;
	*h = magic;
	memcpy((char *)h + header, text, n);
	((char *)h)[header + n] = 0;
	return h;
}

static const char *registered_text(const void *handle)
{
	const struct gmt_nvtx_string *s = handle;
	return s && s->magic == STRING_MAGIC ? s->text : "";
}

static const char *domain_name(const void *handle)
{
	const struct gmt_nvtx_domain *d = handle;
	return d && d->magic == DOMAIN_MAGIC ? d->name : NULL;
}

/* The message of `attr` into buf, "domain: " first for a named domain.
 * Attributes too short to hold a message, or of a type we do not know,
 * give the domain alone. */
static const char *event_text(const void *domain, const struct nvtx_event_attributes *attr,
			      char *buf, size_t cap)
{
	const char *dn = domain_name(domain);
	size_t o = 0;
	if (dn) {
		size_t n = strnlen(dn, cap / 2);
		memcpy(buf, dn, n);
		memcpy(buf + n, ": ", 2);
		o = n + 2;
	}
	buf[o] = 0;
	if (!attr ||
	    attr->size < offsetof(struct nvtx_event_attributes, message) + sizeof attr->message)
		return buf;
	const char *text = NULL;
	switch (attr->message_type) {
	case NVTX_MSG_ASCII:
		text = attr->message.ascii;
		break;
	case NVTX_MSG_WIDE:
		if (attr->message.wide)
			wide_to_utf8(attr->message.wide, buf + o, cap - o);
		return buf;
	case NVTX_MSG_REGISTERED:
		text = registered_text(attr->message.registered);
		break;
	}
	/* A plain loop: with ASan, GCC 12 misreads strnlen's bound against a
	 * "" that registered_text may return (-Wstringop-overread). */
	for (size_t i = 0; text && text[i] && o + 1 < cap; i++)
		buf[o++] = text[i];
	buf[o] = 0;
	return buf;
}

static uint64_t new_range_id(void)
{
	/* Unique ids only, no ordering with anything: relaxed. */
	return __atomic_add_fetch(&last_range_id, 1, __ATOMIC_RELAXED);
}

static int push(const char *text)
{
	gmt_record_range(GMT_RANGE_PUSH, 0, GMT_RANGE_SRC_NVTX, text);
	return tls_depth++;
}

static int pop(void)
{
	gmt_record_range(GMT_RANGE_POP, 0, GMT_RANGE_SRC_NVTX, NULL);
	return tls_depth > 0 ? --tls_depth : -1;
}

static uint64_t start(const char *text)
{
	uint64_t id = new_range_id();
	gmt_record_range(GMT_RANGE_START, id, GMT_RANGE_SRC_NVTX, text);
	return id;
}

/* ---- the callbacks -------------------------------------------------------- */

static void mark_ex(const struct nvtx_event_attributes *attr)
{
	char buf[TEXT_MAX + 1];
	gmt_record_range(GMT_RANGE_MARK, 0, GMT_RANGE_SRC_NVTX,
			 event_text(NULL, attr, buf, sizeof buf));
}

static void mark_a(const char *message)
{
	gmt_record_range(GMT_RANGE_MARK, 0, GMT_RANGE_SRC_NVTX, message);
}

static void mark_w(const wchar_t *message)
{
	char buf[TEXT_MAX + 1];
	wide_to_utf8(message, buf, sizeof buf);
	gmt_record_range(GMT_RANGE_MARK, 0, GMT_RANGE_SRC_NVTX, buf);
}

static uint64_t range_start_ex(const struct nvtx_event_attributes *attr)
{
	char buf[TEXT_MAX + 1];
	return start(event_text(NULL, attr, buf, sizeof buf));
}

static uint64_t range_start_a(const char *message)
{
	return start(message);
}

static uint64_t range_start_w(const wchar_t *message)
{
	char buf[TEXT_MAX + 1];
	wide_to_utf8(message, buf, sizeof buf);
	return start(buf);
}

static void range_end(uint64_t id)
{
	gmt_record_range(GMT_RANGE_END, id, GMT_RANGE_SRC_NVTX, NULL);
}

static int range_push_ex(const struct nvtx_event_attributes *attr)
{
	char buf[TEXT_MAX + 1];
	return push(event_text(NULL, attr, buf, sizeof buf));
}

static int range_push_a(const char *message)
{
	return push(message);
}

static int range_push_w(const wchar_t *message)
{
	char buf[TEXT_MAX + 1];
	wide_to_utf8(message, buf, sizeof buf);
	return push(buf);
}

static int range_pop(void)
{
	return pop();
}

static void domain_mark_ex(const void *domain, const struct nvtx_event_attributes *attr)
{
	char buf[TEXT_MAX + 1];
	gmt_record_range(GMT_RANGE_MARK, 0, GMT_RANGE_SRC_NVTX,
			 event_text(domain, attr, buf, sizeof buf));
}

static uint64_t domain_range_start_ex(const void *domain, const struct nvtx_event_attributes *attr)
{
	char buf[TEXT_MAX + 1];
	return start(event_text(domain, attr, buf, sizeof buf));
}

static void domain_range_end(const void *domain, uint64_t id)
{
	range_end(id);
}

static int domain_range_push_ex(const void *domain, const struct nvtx_event_attributes *attr)
{
	char buf[TEXT_MAX + 1];
	return push(event_text(domain, attr, buf, sizeof buf));
}

static int domain_range_pop(const void *domain)
{
	return pop();
}

static void *register_string_a(const void *domain, const char *text)
{
	return new_handle(STRING_MAGIC, offsetof(struct gmt_nvtx_string, text), text, NULL);
}

static void *register_string_w(const void *domain, const wchar_t *text)
{
	return new_handle(STRING_MAGIC, offsetof(struct gmt_nvtx_string, text), NULL, text);
}

/* The same name gives the same handle, as NVTX asks. */
static void *domain_create(const char *ascii, const wchar_t *wide)
{
	struct gmt_nvtx_domain *d =
	    new_handle(DOMAIN_MAGIC, offsetof(struct gmt_nvtx_domain, name), ascii, wide);
	if (!d)
		return NULL; /* NULL is the default domain: events still recorded */
	pthread_mutex_lock(&domains_lock);
	for (struct gmt_nvtx_domain *e = domains; e; e = e->next) {
		if (!strcmp(e->name, d->name)) {
			free(d);
			d = e;
			goto out;
		}
	}
	d->next = domains;
	domains = d;
out:
	pthread_mutex_unlock(&domains_lock);
	return d;
}

static void *domain_create_a(const char *name)
{
	return domain_create(name, NULL);
}

static void *domain_create_w(const wchar_t *name)
{
	return domain_create(NULL, name);
}

static void domain_destroy(void *domain)
{
	/* Kept: another thread may still pass the handle. */
}

/* ---- initialization ------------------------------------------------------- */

struct slot_fill {
	unsigned slot;
	nvtx_slot_fn fn;
};

#define FILL(slot, fn)                                                                             \
	{                                                                                          \
		slot, (nvtx_slot_fn)(fn)                                                           \
	}

static const struct slot_fill core_fills[] = {
    FILL(CORE_MARK_EX, mark_ex),
    FILL(CORE_MARK_A, mark_a),
    FILL(CORE_MARK_W, mark_w),
    FILL(CORE_RANGE_START_EX, range_start_ex),
    FILL(CORE_RANGE_START_A, range_start_a),
    FILL(CORE_RANGE_START_W, range_start_w),
    FILL(CORE_RANGE_END, range_end),
    FILL(CORE_RANGE_PUSH_EX, range_push_ex),
    FILL(CORE_RANGE_PUSH_A, range_push_a),
    FILL(CORE_RANGE_PUSH_W, range_push_w),
    FILL(CORE_RANGE_POP, range_pop),
};

static const struct slot_fill core2_fills[] = {
    FILL(CORE2_DOMAIN_MARK_EX, domain_mark_ex),
    FILL(CORE2_DOMAIN_RANGE_START_EX, domain_range_start_ex),
    FILL(CORE2_DOMAIN_RANGE_END, domain_range_end),
    FILL(CORE2_DOMAIN_RANGE_PUSH_EX, domain_range_push_ex),
    FILL(CORE2_DOMAIN_RANGE_POP, domain_range_pop),
    FILL(CORE2_DOMAIN_REGISTER_STRING_A, register_string_a),
    FILL(CORE2_DOMAIN_REGISTER_STRING_W, register_string_w),
    FILL(CORE2_DOMAIN_CREATE_A, domain_create_a),
    FILL(CORE2_DOMAIN_CREATE_W, domain_create_w),
    FILL(CORE2_DOMAIN_DESTROY, domain_destroy),
};

/* Fills the slots this loader has; a shorter table (an older NVTX) just
 * gets fewer. */
static int fill_module(const struct nvtx_callbacks_table *cb, int module,
		       const struct slot_fill *fills, size_t nfills)
{
	nvtx_module_table table = NULL;
	unsigned count = 0;
	if (!cb->get_module_table(module, &table, &count) || !table)
		return 0;
	for (size_t i = 0; i < nfills; i++)
		if (fills[i].slot < count && table[fills[i].slot])
			*table[fills[i].slot] = fills[i].fn;
	return 1;
}

/* Returns 0 (the loader then makes every NVTX call a no-op) when tracing
 * is off or the loader offers no callback table. */
GMT_EXPORT int InitializeInjectionNvtx2(nvtx_get_export_table_fn get_export_table)
{
	if (!get_export_table || !gmt_tracing())
		return 0;
	const struct nvtx_callbacks_table *cb = get_export_table(NVTX_TABLE_CALLBACKS);
	if (!cb || cb->struct_size < sizeof *cb || !cb->get_module_table)
		return 0;
	const struct nvtx_version_table *vt = get_export_table(NVTX_TABLE_VERSION_INFO);
	if (vt && vt->struct_size >= sizeof *vt && vt->set_injection_version)
		vt->set_injection_version(IMPLEMENTED_NVTX_VERSION);
	int ok =
	    fill_module(cb, NVTX_MODULE_CORE, core_fills, sizeof core_fills / sizeof *core_fills);
	ok |= fill_module(cb, NVTX_MODULE_CORE2, core2_fills,
			  sizeof core2_fills / sizeof *core2_fills);
	return ok;
}
