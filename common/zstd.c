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

static void load(void)
{
	/* Test-only override (t-zstd-missing.sh); never taken from a setuid
	 * program's environment. */
	const char *name = secure_getenv("GPUMEMTRACE_ZSTD_LIB");
	if (!name || !*name)
		name = GMT_ZSTD_SONAME;
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(reason, sizeof reason, "%s", e ? e : name);
		return;
	}
#define GMT_ZSTD_SYM_(ret, fn, params)                                                             \
	if (!(zstd_funcs.fn = (ret(*) params)dlsym(h, #fn))) {                                     \
		snprintf(reason, sizeof reason, "%s has no %s", name, #fn);                        \
		dlclose(h);                                                                        \
		return;                                                                            \
	}
	GMT_ZSTD_FUNCS(GMT_ZSTD_SYM_)
#undef GMT_ZSTD_SYM_
	loaded = 1; /* kept open for the life of the process */
}

const struct gmt_zstd *gmt_zstd_get(const char **why)
{
	pthread_once(&once, load);
	if (why)
		*why = loaded ? "" : reason;
	return loaded ? &zstd_funcs : NULL;
}
