#include "common/log.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct out {
	char *p, *end;
};

static void put_char(struct out *o, char c)
{
	if (o->p < o->end)
		*o->p++ = c;
}

static void put_str(struct out *o, const char *s)
{
	if (!s)
		s = "(null)";
	while (*s)
		put_char(o, *s++);
}

static void put_uint(struct out *o, unsigned long long v, unsigned base)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n)
		put_char(o, tmp[--n]);
}

static int gmt_vformat(char *buf, size_t size, const char *fmt, va_list ap)
{
	if (!size)
		return 0;
	struct out o = {buf, buf + size - 1};
	for (const char *f = fmt; *f; f++) {
		if (*f != '%') {
			put_char(&o, *f);
			continue;
		}
		int longs = 0, size_t_arg = 0;
		f++;
		while (*f == 'l') {
			longs++;
			f++;
		}
		if (*f == 'z') {
			size_t_arg = 1;
			f++;
		}
		switch (*f) {
		case 's':
			put_str(&o, va_arg(ap, const char *));
			break;
		case 'd': {
			long long v = longs >= 2 ? va_arg(ap, long long)
				      : longs	 ? va_arg(ap, long)
						 : va_arg(ap, int);
			if (v < 0) {
				put_char(&o, '-');
				put_uint(&o, 0ull - (unsigned long long)v, 10);
			} else {
				put_uint(&o, (unsigned long long)v, 10);
			}
			break;
		}
		case 'u':
		case 'x': {
			unsigned long long v = size_t_arg   ? va_arg(ap, size_t)
					       : longs >= 2 ? va_arg(ap, unsigned long long)
					       : longs	    ? va_arg(ap, unsigned long)
							    : va_arg(ap, unsigned);
			put_uint(&o, v, *f == 'x' ? 16 : 10);
			break;
		}
		case 'p':
			put_str(&o, "0x");
			put_uint(&o, (uintptr_t)va_arg(ap, void *), 16);
			break;
		case '%':
			put_char(&o, '%');
			break;
		default: /* unsupported conversion: show it rather than misread args */
			put_char(&o, '%');
			if (*f)
				put_char(&o, *f);
			else
				f--;
		}
	}
	*o.p = '\0';
	return (int)(o.p - buf);
}

int gmt_format(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = gmt_vformat(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

/* The stderr the program started with (gmt_log_bind): its device and
 * inode, and whether it was open. Written once, before threads of ours. */
static int log_bound; /* 0: not bound (the CLI, or too early): write; 1: bound */
static int log_open;  /* stderr was open when bound */
static uint64_t log_dev, log_ino;
static uint64_t log_unsaid; /* lines not written: stderr is not that file now */

void gmt_log_bind(void)
{
	struct stat st;
	log_open = fstat(STDERR_FILENO, &st) == 0;
	log_dev = log_open ? (uint64_t)st.st_dev : 0;
	log_ino = log_open ? (uint64_t)st.st_ino : 0;
	log_bound = 1;
}

uint64_t gmt_log_unsaid(void)
{
	return __atomic_load_n(&log_unsaid, __ATOMIC_RELAXED);
}

/* Whether descriptor 2 is still the stderr the program started with: a
 * daemon that closed it may have opened its own data file there. */
static int stderr_is_ours(void)
{
	if (!log_bound)
		return 1;
	struct stat st;
	return log_open && fstat(STDERR_FILENO, &st) == 0 && (uint64_t)st.st_dev == log_dev &&
	       (uint64_t)st.st_ino == log_ino;
}

void gmt_log(const char *fmt, ...)
{
	int saved_errno = errno;
	if (!stderr_is_ours()) {
		__atomic_add_fetch(&log_unsaid, 1, __ATOMIC_RELAXED);
		errno = saved_errno;
		return;
	}
	char buf[512];
	static const char prefix[] = "gpumemtrace: ";
	memcpy(buf, prefix, sizeof prefix - 1);
	va_list ap;
	va_start(ap, fmt);
	int n = sizeof prefix - 1;
	n += gmt_vformat(buf + n, sizeof buf - n - 1, fmt, ap);
	va_end(ap);
	buf[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
	(void)w;
	errno = saved_errno;
}
