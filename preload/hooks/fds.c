/* pipe2, mincore and msync, for libunwind's sake: the pipe it makes to
 * check addresses must sit where the program's own descriptors never land,
 * and must not be used once the program has taken its numbers
 * (preload/stackcache.c says why). Every such call of the process passes
 * here: one call of the core, which does nothing unless the calling thread
 * is inside libunwind. */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h> /* mincore, msync: their declarations */
#include <unistd.h>   /* pipe2 */

#include "preload/hooks/hooks.h"

typedef int (*pipe2_fn)(int[2], int);
typedef int (*mincore_fn)(void *, size_t, unsigned char *);
typedef int (*msync_fn)(void *, size_t, int);

enum { FD_PIPE2, FD_MINCORE, FD_MSYNC, FD_COUNT };
static const char *const fd_names[FD_COUNT] = {"pipe2", "mincore", "msync"};
static void *fd_fns[FD_COUNT];

/* Found at load (never on the call: dlsym takes the loader's lock). */
__attribute__((constructor)) static void find_fd_fns(void)
{
	for (int i = 0; i < FD_COUNT; i++) {
		void *fn = gmt_libc_next(fd_names[i]);
		if (!fn) {
			dlerror(); /* ours must not show in the program's dlerror() */
			fn = gmt_libc_find(fd_names[i]);
		}
		__atomic_store_n(&fd_fns[i], fn, __ATOMIC_RELEASE);
	}
}

static void *real_fn(int i)
{
	void *fn = __atomic_load_n(&fd_fns[i], __ATOMIC_ACQUIRE);
	return fn ? fn : gmt_libc_find(fd_names[i]);
}

GMT_EXPORT int pipe2(int fds[2], int flags)
{
	pipe2_fn real = (pipe2_fn)real_fn(FD_PIPE2);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	int rc = real(fds, flags);
	if (rc == 0)
		gmt_unwinder_pipe(fds);
	return rc;
}

GMT_EXPORT int mincore(void *addr, size_t len, unsigned char *vec)
{
	mincore_fn real = (mincore_fn)real_fn(FD_MINCORE);
	if (!real || !gmt_unwinder_may_check()) {
		errno = real ? ENOMEM : ENOSYS;
		return -1;
	}
	return real(addr, len, vec);
}

GMT_EXPORT int msync(void *addr, size_t len, int flags)
{
	msync_fn real = (msync_fn)real_fn(FD_MSYNC);
	if (!real || !gmt_unwinder_may_check()) {
		errno = real ? ENOMEM : ENOSYS;
		return -1;
	}
	return real(addr, len, flags);
}
