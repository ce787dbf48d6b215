/* Sizes, times, JSON and XML text as the reports print them. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/text.h"

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

void json_cstr0(FILE *f, const char *s)
{
	json_str(f, s, strlen(s));
}

const char *path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
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
