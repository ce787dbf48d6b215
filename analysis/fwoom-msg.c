/* Framework out-of-memory messages into figures: see fwoom-msg.h. Sources
 * (framework-view.md): PyTorch's DeviceCachingAllocator::malloc and
 * format_size (§2.2; 1.x copies of CUDACachingAllocator.cpp for the older
 * form), CUDAMallocAsyncAllocator.cpp; XLA's MemoryAllocationError and
 * StreamExecutorMemoryAllocator::Allocate (§3.2); TensorFlow's
 * OpKernelContext::allocate_tensor (§4); CuPy's OutOfMemoryError (§5). */
#include "analysis/fwoom-msg.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const fwmsg_form_name[FWMSG_NFORMS] = {
    [FWMSG_NONE] = "none",
    [FWMSG_TORCH] = "torch",
    [FWMSG_TORCH_1X] = "torch-1.x",
    [FWMSG_TORCH_HUGE] = "torch-huge",
    [FWMSG_TORCH_ASYNC] = "torch-async",
    [FWMSG_CUDA_ERROR] = "cuda-error",
    [FWMSG_HOST] = "host",
    [FWMSG_XLA] = "xla",
    [FWMSG_XLA_REQUEST] = "xla-request",
    [FWMSG_TF] = "tensorflow",
    [FWMSG_CUPY] = "cupy",
};

#define SAT UINT64_MAX

static const struct {
	const char *name;
	uint64_t unit;
} units[] = {
    {"bytes", 1},	 {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30},
    {"TiB", 1ull << 40}, {"PiB", 1ull << 50}, {"EiB", 1ull << 60}, {"B", 1},
};

/* "20.00 MiB", "512 bytes", "16.00GiB", "1,073,741,824 bytes", "123B" at
 * p: the figure, its error (half the last printed digit), and where it
 * ends. A unit is required. */
static const char *parse_size(const char *p, struct fw_size *out)
{
	uint64_t ip = 0;
	int digits = 0;
	for (; isdigit((unsigned char)*p) || (*p == ',' && digits && isdigit((unsigned char)p[1]));
	     p++) {
		if (*p == ',')
			continue;
		unsigned d = (unsigned)(*p - '0');
		ip = ip > (SAT - d) / 10 ? SAT : ip * 10 + d;
		digits++;
	}
	if (!digits)
		return NULL;
	uint64_t frac = 0, scale = 1;
	if (*p == '.' && isdigit((unsigned char)p[1]))
		for (p++; isdigit((unsigned char)*p); p++)
			if (scale < 1000000000ull) {
				frac = frac * 10 + (unsigned)(*p - '0');
				scale *= 10;
			}
	while (*p == ' ')
		p++;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].name);
		if (strncmp(p, units[i].name, n) != 0 || isalpha((unsigned char)p[n]))
			continue;
		unsigned __int128 b = (unsigned __int128)ip * units[i].unit +
				      (unsigned __int128)frac * units[i].unit / scale;
		out->bytes = b > SAT ? SAT : (uint64_t)b;
		out->err = scale > 1 ? units[i].unit / (2 * scale) : 0;
		out->known = true;
		return p + n;
	}
	return NULL;
}

/* The size that ends right before `at` ("3.81 MiB" of "3.81 MiB is free"). */
static bool size_before(const char *start, const char *at, struct fw_size *out)
{
	const char *p = at;
	while (p > start && p[-1] == ' ')
		p--;
	while (p > start && isalpha((unsigned char)p[-1]))
		p--;
	while (p > start && p[-1] == ' ')
		p--;
	while (p > start && (isdigit((unsigned char)p[-1]) || p[-1] == '.' || p[-1] == ','))
		p--;
	struct fw_size s = {0};
	const char *end = parse_size(p, &s);
	if (!end)
		return false;
	while (end < at && *end == ' ')
		end++;
	if (end != at)
		return false;
	*out = s;
	return true;
}

/* The size right after the first `anchor` at or after p. */
static bool size_after(const char *p, const char *anchor, struct fw_size *out)
{
	const char *a = strstr(p, anchor);
	return a && parse_size(a + strlen(anchor), out);
}

/* The size right before the first `anchor` at or after p. */
static bool size_ahead_of(const char *start, const char *p, const char *anchor, struct fw_size *out)
{
	const char *a = strstr(p, anchor);
	return a && size_before(start, a, out);
}

static int int_after(const char *p, const char *anchor)
{
	const char *a = strstr(p, anchor);
	if (!a || !isdigit((unsigned char)a[strlen(anchor)]))
		return -1;
	long v = strtol(a + strlen(anchor), NULL, 10);
	return v >= 0 && v < 1 << 20 ? (int)v : -1;
}

static void add_size(struct fw_size *to, const struct fw_size *s)
{
	to->bytes = to->bytes > SAT - s->bytes ? SAT : to->bytes + s->bytes;
	to->err += s->err;
	to->known = true;
}

/* "Process 1234 has 512.00 MiB memory in use." clauses (NVML, newer). */
static void torch_procs(const char *t, struct fwmsg *m)
{
	for (const char *p = t; (p = strstr(p, "Process ")) != NULL;) {
		p += strlen("Process ");
		char *end;
		unsigned long pid = strtoul(p, &end, 10);
		struct fw_size s = {0};
		if (end == p || strncmp(end, " has ", 5) || !parse_size(end + 5, &s))
			continue;
		m->procs_total++;
		add_size(&m->others, &s);
		if (m->nprocs < FWMSG_MAX_PROCS)
			m->procs[m->nprocs++] = (struct fwmsg_proc){(uint32_t)pid, s};
	}
}

/* 2.1 and later, in the order the allocator writes it (§2.2). */
static bool torch_now(const char *t, struct fwmsg *m)
{
	const char *cap = strstr(t, "total capac"); /* "capacty" in 2.0/2.1 */
	if (!cap)
		return false;
	const char *of = strstr(cap, " of ");
	if (of)
		parse_size(of + 4, &m->total);
	size_after(cap, "of which ", &m->free_bytes);
	m->device = int_after(t, "GPU ");
	torch_procs(t, m);
	size_after(t, "this process has ", &m->self);
	size_ahead_of(t, t, " allowed;", &m->limit);
	size_after(t, "Of the allocated memory ", &m->allocated);
	size_ahead_of(t, t, " allocated in private pools", &m->private_pools);
	size_ahead_of(t, t, " is reserved by PyTorch but unallocated", &m->unallocated);
	return true;
}

/* 1.x: "(GPU 0; 15.78 GiB total capacity; 14.50 GiB already allocated;
 * 3.12 MiB free; [B allowed; ]14.74 GiB reserved in total by PyTorch)". */
static bool torch_1x(const char *t, struct fwmsg *m)
{
	if (!size_ahead_of(t, t, " total capacity;", &m->total))
		return false;
	m->device = int_after(t, "(GPU ");
	size_ahead_of(t, t, " already allocated;", &m->allocated);
	size_ahead_of(t, t, " free;", &m->free_bytes);
	size_ahead_of(t, t, " allowed;", &m->limit);
	struct fw_size r = {0};
	if (size_ahead_of(t, t, " reserved in total by PyTorch", &r)) {
		m->reserved = r;
		if (m->allocated.known) {
			uint64_t a = m->allocated.bytes;
			m->unallocated = (struct fw_size){r.bytes > a ? r.bytes - a : 0,
							  r.err + m->allocated.err, true};
		}
	}
	return true;
}

static enum fwmsg_form torch(const char *t, struct fwmsg *m)
{
	const char *a = strstr(t, "Tried to allocate ");
	if (!a)
		return FWMSG_NONE;
	a += strlen("Tried to allocate ");
	if (!strncmp(a, "more than 1EB", 13)) {
		m->requested = (struct fw_size){1ull << 60, 0, true};
		m->device = -1;
		return FWMSG_TORCH_HUGE;
	}
	parse_size(a, &m->requested);
	if (torch_1x(t, m))
		return FWMSG_TORCH_1X;
	return torch_now(t, m) ? FWMSG_TORCH : FWMSG_NONE;
}

/* backend:cudaMallocAsync (CMA): one figure a line after its label. */
static enum fwmsg_form torch_async(const char *t, struct fwmsg *m)
{
	if (!strstr(t, "would exceed allowed memory"))
		return FWMSG_NONE;
	m->device = int_after(t, "Allocation on device ");
	static const struct {
		const char *label;
		size_t off;
	} lines[] = {
	    {"Currently allocated", offsetof(struct fwmsg, allocated)},
	    {"Requested", offsetof(struct fwmsg, requested)},
	    {"Device limit", offsetof(struct fwmsg, total)},
	    {"Free (according to CUDA)", offsetof(struct fwmsg, free_bytes)},
	    {"PyTorch limit", offsetof(struct fwmsg, limit)},
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		const char *p = strstr(t, lines[i].label);
		p = p ? strchr(p + strlen(lines[i].label), ':') : NULL;
		if (!p)
			continue;
		for (p++; *p == ' ' || *p == '\n'; p++)
			;
		parse_size(p, (struct fw_size *)((char *)m + lines[i].off));
	}
	return FWMSG_TORCH_ASYNC;
}

static enum fwmsg_form cupy(const char *t, struct fwmsg *m)
{
	const char *a = strstr(t, "Out of memory allocating ");
	if (strstr(t, "RESOURCE_EXHAUSTED"))
		return FWMSG_NONE; /* XLA's CPU client says the same (xla()) */
	if (!a || !parse_size(a + strlen("Out of memory allocating "), &m->requested))
		return FWMSG_NONE;
	size_after(a, "allocated so far: ", &m->held);
	size_after(a, "limit set to: ", &m->limit);
	return FWMSG_CUPY;
}

static enum fwmsg_form xla(const char *t, struct fwmsg *m)
{
	const char *a = strstr(t, "Out of memory while trying to allocate ");
	if (a) {
		parse_size(a + strlen("Out of memory while trying to allocate "), &m->requested);
		/* BufferAssignment's stats follow when the compiled program
		 * does not fit: its total allocation, "17.00GiB" */
		const char *ta = strstr(a, "total allocation:");
		if (ta) {
			for (ta += strlen("total allocation:"); *ta == ' '; ta++)
				;
			parse_size(ta, &m->program_total);
		}
		return FWMSG_XLA;
	}
	/* the CPU client's allocator: "RESOURCE_EXHAUSTED: Out of memory
	 * allocating N bytes." (§3.1, run on jaxlib 0.10.2's CPU backend) */
	a = strstr(t, "Out of memory allocating ");
	if (a && strstr(t, "RESOURCE_EXHAUSTED")) {
		parse_size(a + strlen("Out of memory allocating "), &m->requested);
		return FWMSG_HOST;
	}
	a = strstr(t, "Failed to allocate request for ");
	if (!a)
		return FWMSG_NONE;
	const char *paren = strchr(a, '(');
	if (!paren || !parse_size(paren + 1, &m->requested)) /* the exact "(NB)" */
		parse_size(a + strlen("Failed to allocate request for "), &m->requested);
	m->device = int_after(a, "device ordinal ");
	return FWMSG_XLA_REQUEST;
}

static uint64_t dtype_bytes(const char *d)
{
	static const struct {
		const char *name;
		uint64_t size;
	} types[] = {
	    {"float", 4},   {"double", 8},	  {"half", 2},	      {"bfloat16", 2},
	    {"int8", 1},    {"uint8", 1},	  {"int16", 2},	      {"uint16", 2},
	    {"int32", 4},   {"uint32", 4},	  {"int64", 8},	      {"uint64", 8},
	    {"bool", 1},    {"complex64", 8},	  {"complex128", 16}, {"qint8", 1},
	    {"quint8", 1},  {"qint32", 4},	  {"float16", 2},     {"float32", 4},
	    {"float64", 8}, {"float8_e4m3fn", 1}, {"float8_e5m2", 1},
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(d, types[i].name))
			return types[i].size;
	return 0;
}

/* A word of `t` after `anchor` into buf: up to a space or `stop`. */
static const char *word_after(const char *t, const char *anchor, char *buf, size_t size, char stop)
{
	const char *a = strstr(t, anchor);
	if (!a)
		return NULL;
	a += strlen(anchor);
	size_t n = 0;
	while (a[n] && a[n] != ' ' && a[n] != '\n' && a[n] != stop && n + 1 < size)
		n++;
	memcpy(buf, a, n);
	buf[n] = '\0';
	return a + n;
}

/* "OOM when allocating tensor with shape[32,3,224,224] and type float on
 * /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc" (TF1:
 * "tensor of shape [..]"). */
static enum fwmsg_form tf(const char *t, struct fwmsg *m)
{
	const char *a = strstr(t, "OOM when allocating tensor");
	const char *sh = a ? strstr(a, "shape") : NULL;
	const char *open = sh ? strchr(sh, '[') : NULL;
	const char *close = open ? strchr(open, ']') : NULL;
	if (!close)
		return FWMSG_NONE;
	size_t n = (size_t)(close - open + 1);
	n = n < sizeof(m->shape) ? n : sizeof(m->shape) - 1;
	memcpy(m->shape, open, n);
	m->shape[n] = '\0';
	word_after(close, "type ", m->dtype, sizeof(m->dtype), 0);
	word_after(close, " on ", m->where, sizeof(m->where), 0);
	word_after(close, "by allocator ", m->allocator, sizeof(m->allocator), 0);
	m->device = int_after(m->where, "GPU:");
	uint64_t bytes = dtype_bytes(m->dtype);
	for (const char *p = open + 1; bytes && p < close;) {
		char *end;
		unsigned long long d = strtoull(p, &end, 10);
		if (end == p) { /* "[]": a scalar; "[?,8]": unknown */
			bytes = p == open + 1 && *p == ']' ? bytes : 0;
			break;
		}
		unsigned __int128 b = (unsigned __int128)bytes * d;
		bytes = b > SAT ? SAT : (uint64_t)b;
		p = *end == ',' ? end + 1 : end;
	}
	if (bytes)
		m->requested = (struct fw_size){bytes, 0, true};
	bool host = !strncasecmp(m->allocator, "cpu", 3) || strstr(m->where, "CPU:");
	return host ? FWMSG_HOST : FWMSG_TF;
}

static enum fwmsg_form host(const char *t, struct fwmsg *m)
{
	const char *a = strstr(t, "Out of host memory while trying to allocate ");
	if (a) {
		parse_size(a + strlen("Out of host memory while trying to allocate "),
			   &m->requested);
		return FWMSG_HOST;
	}
	a = strstr(t, "DefaultCPUAllocator:");
	if (!a)
		return FWMSG_NONE;
	size_after(a, "tried to allocate ", &m->requested);
	return FWMSG_HOST;
}

/* A copy without the "[rank3]: " that torch.distributed's excepthook puts
 * before each line (§2.2), NUL-terminated, at most FWMSG_MAX_TEXT bytes. */
static char *clean_copy(const char *msg, size_t len)
{
	if (len > FWMSG_MAX_TEXT)
		len = FWMSG_MAX_TEXT;
	char *t = malloc(len + 1);
	if (!t)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		if (i == 0 || msg[i - 1] == '\n') {
			size_t k = i;
			if (msg[k] == '[' && k + 5 < len && !strncmp(msg + k + 1, "rank", 4)) {
				for (k += 5; k < len && isdigit((unsigned char)msg[k]); k++)
					;
				if (k + 1 < len && msg[k] == ']' && msg[k + 1] == ':') {
					i = k + 2;
					if (i < len && msg[i] == ' ')
						i++;
					continue;
				}
			}
		}
		t[o++] = msg[i] ? msg[i] : ' ';
		i++;
	}
	t[o] = '\0';
	return t;
}

enum fwmsg_form fwmsg_parse(const char *msg, size_t len, struct fwmsg *out)
{
	memset(out, 0, sizeof(*out));
	out->device = -1;
	char *t = msg ? clean_copy(msg, len) : NULL;
	if (!t)
		return FWMSG_NONE;
	/* the most specific forms first: a TF OOM may quote XLA's text */
	enum fwmsg_form (*const parsers[])(const char *, struct fwmsg *) = {
	    torch_async, torch, cupy, tf, host, xla,
	};
	enum fwmsg_form f = FWMSG_NONE;
	for (size_t i = 0; i < sizeof(parsers) / sizeof(parsers[0]) && f == FWMSG_NONE; i++)
		f = parsers[i](t, out);
	if (f == FWMSG_NONE &&
	    (strstr(t, "CUDA error: out of memory") || strstr(t, "CUDA_ERROR_OUT_OF_MEMORY") ||
	     strstr(t, "cudaErrorMemoryAllocation")))
		f = FWMSG_CUDA_ERROR;
	free(t);
	out->form = f;
	return f;
}
