/* The reader library out of memory: capi-oom LIB TRACE opens TRACE through
 * LIB (libgpumemtrace-reader.so, dlopen'd as Python's ctypes does) with the
 * Nth allocation failing, for N = 1, 2, ... until a whole walk (open, every
 * table, close; follow open, poll, status, close) makes fewer than N. Each
 * walk must end in the library's own error ("out of memory") or in success:
 * never an exit, an abort or a crash of this process, which stands for the
 * Python that loaded it. Prints "walks N, oom-errors E, allocations A".
 *
 * malloc, calloc and realloc are this program's (-rdynamic), so the
 * library's allocations, and libc's on its behalf, come here. */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumemtrace/trace-reader.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);

static long capi_armed_count = -1; /* allocations since arming; -1: off */
static long capi_fail_at;	   /* the one that fails (1-based) */

static int capi_should_fail(void)
{
	if (capi_armed_count < 0)
		return 0;
	if (++capi_armed_count == capi_fail_at) {
		errno = ENOMEM;
		return 1;
	}
	return 0;
}

void *malloc(size_t n)
{
	return capi_should_fail() ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	return capi_should_fail() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	return capi_should_fail() ? NULL : __libc_realloc(p, n);
}

struct capi_api {
	struct gmtr *(*open)(const char *, char *, size_t);
	void (*close)(struct gmtr *);
	const char *(*meta)(struct gmtr *);
	int64_t (*table)(struct gmtr *, const char *, const char *);
	const char *(*error)(struct gmtr *);
	struct gmtr_follow *(*fopen)(const char *, const char *, char *, size_t);
	int64_t (*poll)(struct gmtr_follow *);
	const char *(*status)(struct gmtr_follow *);
	void (*fclose)(struct gmtr_follow *);
};

/* The library's own words, or the system's for a call that failed ENOMEM. */
static int capi_is_oom(const char *msg)
{
	return strstr(msg, "out of memory") || strstr(msg, strerror(ENOMEM));
}

static const char *const capi_tables[] = {"events",  "frames", "stacks",
					  "samples", "ranges", "counters"};

/* One walk; returns the number of "out of memory" errors it saw. */
static int capi_walk(const struct capi_api *a, const char *trace)
{
	char err[256] = "";
	int ooms = 0;
	struct gmtr *g = a->open(trace, err, sizeof(err));
	if (!g) {
		if (!capi_is_oom(err)) {
			fprintf(stderr, "capi-oom: open failed but not for memory: %s\n", err);
			exit(1);
		}
		ooms++;
	} else {
		(void)a->meta(g);
		for (size_t i = 0; i < sizeof(capi_tables) / sizeof(*capi_tables); i++)
			if (a->table(g, capi_tables[i], NULL) < 0) {
				if (!capi_is_oom(a->error(g))) {
					fprintf(stderr, "capi-oom: table %s: %s\n", capi_tables[i],
						a->error(g));
					exit(1);
				}
				ooms++;
			}
		a->close(g);
	}
	err[0] = 0;
	struct gmtr_follow *f = a->fopen(trace, "pytest", err, sizeof(err));
	if (!f) {
		if (!capi_is_oom(err)) {
			fprintf(stderr, "capi-oom: follow open: %s\n", err);
			exit(1);
		}
		return ooms + 1;
	}
	if (a->poll(f) < 0)
		ooms++;
	(void)a->status(f);
	a->fclose(f);
	return ooms;
}

#define SYM(field, name)                                                                           \
	do {                                                                                       \
		*(void **)&a.field = dlsym(lib, name);                                             \
		if (!a.field) {                                                                    \
			fprintf(stderr, "capi-oom: %s missing\n", name);                           \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: capi-oom LIB TRACE\n");
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "capi-oom: %s\n", dlerror());
		return 1;
	}
	struct capi_api a;
	SYM(open, "gmtr_open");
	SYM(close, "gmtr_close");
	SYM(meta, "gmtr_meta_json");
	SYM(table, "gmtr_table");
	SYM(error, "gmtr_error");
	SYM(fopen, "gmtr_follow_open");
	SYM(poll, "gmtr_follow_poll");
	SYM(status, "gmtr_follow_status_json");
	SYM(fclose, "gmtr_follow_close");
	capi_walk(&a, argv[2]); /* once unarmed: lazy set-ups (stdio) out of the count */

	long walks = 0, oom_errors = 0, total = 0;
	for (long n = 1;; n++) {
		capi_fail_at = n;
		capi_armed_count = 0;
		int ooms = capi_walk(&a, argv[2]);
		long made = capi_armed_count;
		capi_armed_count = -1;
		walks++;
		oom_errors += ooms;
		if (made < n) { /* nothing failed: every allocation was tried */
			total = made;
			break;
		}
	}
	printf("walks %ld, oom-errors %ld, allocations %ld\n", walks, oom_errors, total);
	return 0;
}
