/* libzstd at run time: see zstd.h. */
#include "common/zstd.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct gmt_zstd zstd_funcs;
static int loaded;
static char reason[160];
static const struct gmt_dl *loader; /* the first caller's, for load() */

static void load(void)
{
	/* Test-only override (t-zstd.sh); never taken from a setuid
	 * program's environment. */
	const char *name = secure_getenv("GPUMEMTRACE_ZSTD_LIB");
	if (!name || !*name)
		name = GMT_ZSTD_SONAME;
	void *h = loader->open(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(reason, sizeof reason, "%s", e ? e : name);
		return;
	}
#define GMT_ZSTD_SYM_(ret, fn, params)                                                             \
	if (!(zstd_funcs.fn = (ret(*) params)loader->sym(h, #fn))) {                               \
		snprintf(reason, sizeof reason, "%s has no %s", name, #fn);                        \
		loader->close(h);                                                                  \
		return;                                                                            \
	}
	GMT_ZSTD_FUNCS(GMT_ZSTD_SYM_)
#undef GMT_ZSTD_SYM_
	zstd_funcs.ZSTD_estimateCCtxSize = (size_t(*)(int))loader->sym(h, "ZSTD_estimateCCtxSize");
	zstd_funcs.ZSTD_initStaticCCtx =
	    (ZSTD_CCtx * (*)(void *, size_t)) loader->sym(h, "ZSTD_initStaticCCtx");
	loaded = 1; /* kept open for the life of the process */
}

const struct gmt_zstd *gmt_zstd_get(const struct gmt_dl *dl, const char **why)
{
	/* Every caller in a binary passes the same loader: a racing store
	 * writes the same value, and pthread_once orders it before load(). */
	if (!__atomic_load_n(&loader, __ATOMIC_RELAXED))
		__atomic_store_n(&loader, dl, __ATOMIC_RELAXED);
	pthread_once(&once, load);
	if (why)
		*why = loaded ? "" : reason;
	return loaded ? &zstd_funcs : NULL;
}
