/* libzstd at run time: dlopen("libzstd.so.1"), never linked, no zstd
 * headers. Shared by the preload library (writer) and the CLI (reader).
 *
 * The prototypes below are libzstd's stable API (zstd.h, 1.4 and later);
 * tests/integration/t-zstd-decls.sh checks them against /usr/include/zstd.h
 * when it is installed. */
#ifndef GMT_ZSTD_H
#define GMT_ZSTD_H

#include <stddef.h>

typedef struct ZSTD_CCtx_s ZSTD_CCtx;
typedef struct ZSTD_DCtx_s ZSTD_DCtx;

/* X(return type, name, parameters) */
#define GMT_ZSTD_FUNCS(X)                                                                          \
	X(size_t, ZSTD_compressBound, (size_t srcSize))                                            \
	X(unsigned, ZSTD_isError, (size_t code))                                                   \
	X(const char *, ZSTD_getErrorName, (size_t code))                                          \
	X(ZSTD_CCtx *, ZSTD_createCCtx, (void))                                                    \
	X(size_t, ZSTD_freeCCtx, (ZSTD_CCtx * cctx))                                               \
	X(size_t, ZSTD_compressCCtx,                                                               \
	  (ZSTD_CCtx * cctx, void *dst, size_t dstCapacity, const void *src, size_t srcSize,       \
	   int compressionLevel))                                                                  \
	X(ZSTD_DCtx *, ZSTD_createDCtx, (void))                                                    \
	X(size_t, ZSTD_freeDCtx, (ZSTD_DCtx * dctx))                                               \
	X(size_t, ZSTD_decompressDCtx,                                                             \
	  (ZSTD_DCtx * dctx, void *dst, size_t dstCapacity, const void *src, size_t srcSize))      \
	X(unsigned long long, ZSTD_getFrameContentSize, (const void *src, size_t srcSize))

#define GMT_ZSTD_CONTENTSIZE_UNKNOWN (0ULL - 1)
#define GMT_ZSTD_CONTENTSIZE_ERROR   (0ULL - 2)

struct gmt_zstd {
#define GMT_ZSTD_PTR_(ret, name, params) ret(*name) params;
	GMT_ZSTD_FUNCS(GMT_ZSTD_PTR_)
#undef GMT_ZSTD_PTR_
	/* Optional (zstd's static-linking API, exported by every libzstd.so
	 * we know; NULL where not): a compression context in memory the
	 * caller gives, which then never allocates (the preload library's
	 * final flush runs where malloc may wait for good). */
	size_t (*ZSTD_estimateCCtxSize)(int compressionLevel);
	ZSTD_CCtx *(*ZSTD_initStaticCCtx)(void *workspace, size_t workspaceSize);
};

/* The default soname; GPUMEMTRACE_ZSTD_LIB (test-only) names another. */
#define GMT_ZSTD_SONAME "libzstd.so.1"

/* How a binary loads a library: the CLI passes libc's dlopen, dlsym and
 * dlclose, the preload library its own path to them, since a plain call
 * there binds to its exported dlopen/dlsym/dlclose hooks (-Bsymbolic) and
 * common/ never calls into the hooks (make check-layers). */
struct gmt_dl {
	void *(*open)(const char *file, int mode);
	void *(*sym)(void *handle, const char *name);
	int (*close)(void *handle);
};

/* The loaded library, or NULL when it cannot be loaded (why: a one-line
 * reason, for a NOTE or an error). Loads once per process, with the first
 * call's dl; thread-safe. */
const struct gmt_zstd *gmt_zstd_get(const struct gmt_dl *dl, const char **why);

#endif
