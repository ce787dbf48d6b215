/* Helpers shared by the commands: errors, argument parsing, API and result
 * names, sizes, times, JSON strings. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void vmsg(const char *cmd, const char *fmt, va_list ap, const char *suffix)
{
	char buf[1024];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	/* one line, always */
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	fprintf(stderr, "gpumemtrace%s%s: %s%s\n", cmd ? " " : "", cmd ? cmd : "", buf,
		suffix ? suffix : "");
}

void cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(cmd, fmt, ap, NULL);
	va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char suffix[128];
	snprintf(suffix, sizeof(suffix), " (see gpumemtrace %s%s--help)", cmd ? cmd : "",
		 cmd ? " " : "");
	va_list ap;
	va_start(ap, fmt);
	vmsg(cmd, fmt, ap, suffix);
	va_end(ap);
	return EXIT_USAGE;
}

int cli_parse(int argc, char **argv, const char *help, const char *const *flags, bool *set,
	      const char **trace)
{
	const char *cmd = argv[0];
	const char *pos = NULL;
	int npos = 0, dashdash = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!dashdash && strcmp(a, "--") == 0) {
			dashdash = 1;
			continue;
		}
		if (!dashdash && a[0] == '-' && a[1]) {
			if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
				fputs(help, stdout);
				return 0;
			}
			int found = 0;
			for (int f = 0; flags && flags[f]; f++) {
				size_t n = strlen(flags[f]);
				if (strncmp(a, flags[f], n) == 0 && a[n] == '=')
					return cli_usage_error(cmd, "option '%s' takes no value",
							       flags[f]);
				if (strcmp(a, flags[f]) == 0) {
					set[f] = true;
					found = 1;
				}
			}
			if (!found)
				return cli_usage_error(cmd, "unknown option '%s'", a);
			continue;
		}
		if (npos++ == 0)
			pos = a;
	}
	if (npos == 0)
		return cli_usage_error(cmd, "missing TRACE argument");
	if (npos > 1)
		return cli_usage_error(cmd, "expected one TRACE argument, got %d", npos);
	*trace = pos;
	return -1;
}

struct gmt_reader *cli_open(const char *cmd, const char *path, int *rc)
{
	struct gmt_read_error err;
	struct gmt_reader *r = gmt_reader_open(path, &err);
	if (r) {
		*rc = 0;
		return r;
	}
	if (err.code == GMT_READ_ERR_OPEN) {
		cli_error(cmd, "cannot open %s: %s", path, err.msg);
		*rc = EXIT_INPUT;
	} else if (err.code == GMT_READ_ERR_ZSTD) {
		cli_error(cmd, "cannot read %s: %s", path, err.msg);
		*rc = EXIT_INPUT;
	} else {
		cli_error(cmd, "%s: %s", path, err.msg);
		*rc = EXIT_TRACE;
	}
	return NULL;
}

int cli_finish(const char *cmd, const char *path, const struct gmt_read_info *info)
{
	unsigned long long off = (unsigned long long)info->stop_offset;
	unsigned long long lost = (unsigned long long)info->unreadable;
	switch (info->stop) {
	case GMT_STOP_IO:
		cli_error(
		    cmd,
		    "cannot read %s: %s (chunk at offset %llu); results cover the first %llu bytes",
		    path, info->stop_msg, off, (unsigned long long)info->readable_end);
		return EXIT_INPUT;
	case GMT_STOP_CORRUPT:
		cli_error(
		    cmd,
		    "%s: corrupt trace: bad chunk at offset %llu (%s); %llu bytes unreadable; "
		    "results cover the readable part",
		    path, off, info->stop_msg, lost);
		return EXIT_TRACE;
	case GMT_STOP_TORN:
		cli_error(
		    cmd,
		    "warning: %s: incomplete trace: torn tail at offset %llu (%s), %llu bytes "
		    "unreadable; results cover the readable part",
		    path, off, info->stop_msg, lost);
		return 0;
	case GMT_STOP_NONE:
		break;
	}
	if (!info->complete)
		cli_error(cmd,
			  "warning: %s: incomplete trace: no trailer at the end (the process was "
			  "killed or is still running); results cover what was written",
			  path);
	return 0;
}

/* ---- APIs and results ---- */

const struct api_info api_table_[GMT_API_MAX_ + 1] = {
#define X_(id, name, op, kind, space) [id] = {#name, op, kind, space},
    GMT_API_LIST(X_)
#undef X_
};

const char *api_name(uint32_t api)
{
	static char buf[32];
	const struct api_info *a = api_lookup(api);
	if (a)
		return a->name;
	snprintf(buf, sizeof(buf), "api#%u", api);
	return buf;
}

struct code_name {
	unsigned code;
	const char *name;
};

static const struct code_name driver_codes[] = {
    {0, "CUDA_SUCCESS"},
    {1, "CUDA_ERROR_INVALID_VALUE"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "CUDA_ERROR_DEINITIALIZED"},
    {34, "CUDA_ERROR_STUB_LIBRARY"},
    {100, "CUDA_ERROR_NO_DEVICE"},
    {101, "CUDA_ERROR_INVALID_DEVICE"},
    {201, "CUDA_ERROR_INVALID_CONTEXT"},
    {208, "CUDA_ERROR_ALREADY_MAPPED"},
    {211, "CUDA_ERROR_NOT_MAPPED"},
    {400, "CUDA_ERROR_INVALID_HANDLE"},
    {401, "CUDA_ERROR_ILLEGAL_STATE"},
    {500, "CUDA_ERROR_NOT_FOUND"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {800, "CUDA_ERROR_NOT_PERMITTED"},
    {801, "CUDA_ERROR_NOT_SUPPORTED"},
    {999, "CUDA_ERROR_UNKNOWN"},
};

static const struct code_name runtime_codes[] = {
    {0, "cudaSuccess"},
    {1, "cudaErrorInvalidValue"},
    {2, "cudaErrorMemoryAllocation"},
    {3, "cudaErrorInitializationError"},
    {4, "cudaErrorCudartUnloading"},
    {12, "cudaErrorInvalidPitchValue"},
    {17, "cudaErrorInvalidDevicePointer"},
    {34, "cudaErrorStubLibrary"},
    {35, "cudaErrorInsufficientDriver"},
    {100, "cudaErrorNoDevice"},
    {101, "cudaErrorInvalidDevice"},
    {400, "cudaErrorInvalidResourceHandle"},
    {500, "cudaErrorSymbolNotFound"},
    {700, "cudaErrorIllegalAddress"},
    {800, "cudaErrorNotPermitted"},
    {801, "cudaErrorNotSupported"},
    {999, "cudaErrorUnknown"},
};

const char *result_name(uint32_t api, uint64_t result)
{
	const char *name = api_name(api);
	int runtime = strncmp(name, "cuda", 4) == 0;
	const struct code_name *t = runtime ? runtime_codes : driver_codes;
	size_t n = runtime ? sizeof(runtime_codes) / sizeof(*t) : sizeof(driver_codes) / sizeof(*t);
	for (size_t i = 0; i < n; i++)
		if (t[i].code == result)
			return t[i].name;
	return NULL;
}

/* ---- formatting ---- */

const char *fmt_size(char *buf, uint64_t bytes)
{
	static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	if (bytes < 1024) {
		snprintf(buf, 32, "%" PRIu64 " B", bytes);
		return buf;
	}
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	snprintf(buf, 32, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
	return buf;
}

const char *fmt_reltime(char *buf, int64_t ns)
{
	uint64_t a = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
	snprintf(buf, 32, "%c%" PRIu64 ".%09" PRIu64, ns < 0 ? '-' : '+', a / 1000000000u,
		 a % 1000000000u);
	return buf;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0. */
static size_t utf8_len(const unsigned char *p, size_t left)
{
	unsigned c = p[0];
	size_t n;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, min = 0x10000;
	else
		return 0;
	if (left < n)
		return 0;
	unsigned cp = c & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void json_str(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	putc('"', f);
	for (size_t i = 0; i < len;) {
		unsigned c = p[i];
		if (c == '"' || c == '\\') {
			putc('\\', f);
			putc((int)c, f);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			switch (c) {
			case '\n':
				fputs("\\n", f);
				break;
			case '\t':
				fputs("\\t", f);
				break;
			case '\r':
				fputs("\\r", f);
				break;
			case '\b':
				fputs("\\b", f);
				break;
			case '\f':
				fputs("\\f", f);
				break;
			default:
				fprintf(f, "\\u%04x", c);
			}
			i++;
		} else if (c < 0x80) {
			putc((int)c, f);
			i++;
		} else {
			size_t n = utf8_len(p + i, len - i);
			if (n) {
				fwrite(p + i, 1, n, f);
				i += n;
			} else {
				fputs("\\ufffd", f);
				i++;
			}
		}
	}
	putc('"', f);
}

const char *path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		cli_error(NULL, "out of memory");
		exit(EXIT_INPUT);
	}
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p) {
		cli_error(NULL, "out of memory");
		exit(EXIT_INPUT);
	}
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xrealloc(NULL, n), s, n);
}

/* XML text: escaped, control characters and invalid UTF-8 as '?'. */
void xml_text(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned c = *p;
		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c == '\'')
			fputs("&apos;", f);
		else if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
			fputc('?', f);
		else if (c < 0x80)
			fputc((int)c, f);
		else {
			/* a valid UTF-8 sequence goes through whole */
			size_t n = c >= 0xc2 && c <= 0xdf   ? 2
				   : c >= 0xe0 && c <= 0xef ? 3
				   : c >= 0xf0 && c <= 0xf4 ? 4
							    : 0;
			size_t k = 1;
			while (n && k < n && (p[k] & 0xc0) == 0x80)
				k++;
			if (n && k == n) {
				fwrite(p, 1, n, f);
				p += n;
				continue;
			}
			fputc('?', f);
		}
		p++;
	}
}
