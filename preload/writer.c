/* The trace file: creating it, the pending chunk, compression and the
 * writes (preload/writer.h). What goes into the chunks: encode.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/codec.h"
#include "common/log.h"
#include "common/zstd.h"
#include "preload/mem.h"
#include "gpumemtrace/format.h"
#include "preload/clock.h"
#include "preload/real.h"
#include "preload/tracer.h"
#include "preload/writer.h"

/* libzstd is loaded through libc's loader, never our dlopen/dlsym hooks. */
static const struct gmt_dl libc_dl = {gmt_libc_dlopen, gmt_libc_dlsym, gmt_libc_dlclose};

#define CHUNK_TARGET (256u << 10) /* write a chunk once this much is pending */
/* zstd level: 1 and the negative (faster) levels measured in
 * docs/performance.md "Trace size". */
#define ZSTD_LEVEL	 1
#define LOST_PENDING_MAX (4u << 20) /* bytes a chunk waits for a reopen: << 16 MiB */

/* ---- chunk buffer ---------------------------------------------------- */
uint8_t *gmt_writer_room(struct gmt_writer *w, size_t n)
{
	if (w->len > GMT_CHUNK_HEADER_SIZE && w->len + n > CHUNK_TARGET) {
		gmt_writer_flush(w);
		/* The program closed our descriptor and makes no call that would
		 * reopen it (gmt_writer_reopen): past this, reopened here, on the
		 * flush thread, rather than a chunk too big to read. */
		if (w->fd_lost && w->len + n > LOST_PENDING_MAX) {
			w->may_reopen = 1;
			gmt_writer_flush(w);
			w->may_reopen = 0;
		}
	}
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : CHUNK_TARGET + 4096;
		while (cap < w->len + n)
			cap *= 2;
		/* mmap, not malloc: made on the program's thread with the
		 * file, grown on the flush thread, whose realloc would take
		 * that thread's arena lock (held, at exit, by a thread a
		 * signal interrupted inside malloc). */
		uint8_t *c = w->chunk ? mremap(w->chunk, w->cap, cap, MREMAP_MAYMOVE)
				      : mmap(NULL, cap, PROT_READ | PROT_WRITE,
					     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED)
			return NULL;
		w->chunk = c;
		w->cap = cap;
	}
	return w->chunk + w->len;
}

/* Whether w->fd is still the file we created (one fstat). */
static int fd_is_ours(const struct gmt_writer *w, struct stat *st)
{
	return w->fd >= 0 && fstat(w->fd, st) == 0 && (uint64_t)st->st_dev == w->dev &&
	       (uint64_t)st->st_ino == w->ino;
}

/* The program closed our descriptor (a daemon closing every one, then
 * opening its own files at 0-2), or made its number one of its own
 * (dup2): the trace is opened again by its path, at a new high number,
 * if the path still names the file we made (device and inode; never a
 * FIFO's wait). The old number is the program's: never written, never
 * closed. open() takes the lowest free number for a moment, which the
 * program's own next open() would have had: so this runs on a thread of
 * the program, between its own calls (gmt_writer_reopen), never on the
 * flush thread while the program runs. Returns 0 when fd is ours again. */
static int reopen(struct gmt_writer *w)
{
	int fd = open(w->abs, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_dev != w->dev ||
	    (uint64_t)st.st_ino != w->ino || fcntl(fd, F_SETFL, 0) != 0 ||
	    lseek(fd, (off_t)w->written, SEEK_SET) != (off_t)w->written) {
		close(fd);
		return -1;
	}
	if ((fd = gmt_fd_high(fd)) < 0)
		return -1;
	w->fd = fd;
	w->reopened++;
	return 0;
}

static void write_all(struct gmt_writer *w, const uint8_t *buf, size_t n)
{
	/* RLIMIT_FSIZE raises SIGXFSZ in the writing thread, whose default
	 * action kills the program. Block it here (the flush thread has every
	 * signal blocked already) and swallow the one our write raised. */
	sigset_t xfsz, old;
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &xfsz, &old);
	/* The program closed our descriptor (a daemon closing every fd) and
	 * maybe opened a file of its own on its number: never write there.
	 * Reopened by its path where that is safe (reopen); else the chunk
	 * waits, pending, for a thread of the program to do it. */
	struct stat st;
	if (!w->failed && !fd_is_ours(w, &st)) {
		w->fd = -1; /* not ours to write, nor to close */
		__atomic_store_n(&w->fd_lost, 1, __ATOMIC_RELAXED);
		if (!w->may_reopen)
			goto out;
		if (reopen(w) != 0 || !fd_is_ours(w, &st)) {
			gmt_log("%s: the program closed or reused the trace's descriptor and the "
				"path no longer names it; tracing stops here, the program runs on",
				w->path);
			w->failed = 1;
		}
		__atomic_store_n(&w->fd_lost, 0, __ATOMIC_RELAXED);
	}
	/* Someone deleted or truncated the file: writing on would leave a
	 * hole of zeros (or nothing at all) instead of a readable trace. */
	if (!w->failed && w->written && (st.st_nlink == 0 || (uint64_t)st.st_size < w->written)) {
		gmt_log("%s was %s under us; tracing stops here, the program runs on", w->path,
			st.st_nlink == 0 ? "deleted" : "truncated");
		w->failed = 1;
	}
	/* A write that does not return (a frozen file system, a hung NFS
	 * mount) is seen by the event path (the program waits for it at most
	 * GPUMEMTRACE_FULL_WAIT_MS in all) and by fork, which then goes on
	 * without flush_lock: the gate keeps this thread from touching
	 * anything of ours again until the fork is done (gmt_fork_prepare). */
	if (n && !w->failed)
		__atomic_store_n(&w->io_since, gmt_now_ns() | 1, __ATOMIC_RELEASE);
	while (n && !w->failed) {
		ssize_t k = write(w->fd, buf, n);
		if (k > 0) {
			w->written += (uint64_t)k;
			buf += k;
			n -= (size_t)k;
		} else if (k < 0 && errno == EINTR) {
			continue;
		} else {
			int err = k < 0 ? errno : ENOSPC;
			if (err == EFBIG) {
				struct timespec zero = {0, 0};
				sigtimedwait(&xfsz, NULL, &zero);
			}
			gmt_log("cannot write %s: %s; tracing stops here, the program runs on",
				w->path, strerror(err));
			w->failed = 1;
		}
	}
	if (__atomic_load_n(&w->io_since, __ATOMIC_RELAXED)) {
		if (w->io_gate)
			pthread_mutex_lock(w->io_gate);
		/* Pairs with the acquire loads in gmt_writer_stuck_ns. */
		__atomic_store_n(&w->io_since, 0, __ATOMIC_RELEASE);
		if (w->io_gate)
			pthread_mutex_unlock(w->io_gate);
	}
out:
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

uint64_t gmt_writer_stuck_ns(const struct gmt_writer *w, uint64_t now)
{
	uint64_t since = __atomic_load_n(&w->io_since, __ATOMIC_ACQUIRE);
	return since && now > since ? now - since : 0;
}

int gmt_lost_to_stall(uint64_t stuck_ns, uint64_t full_wait_ns, int deadline_passed)
{
	uint64_t min_ns = (uint64_t)GMT_STALL_MIN_MS * 1000000u;
	return stuck_ns >= min_ns && (stuck_ns >= full_wait_ns || deadline_passed);
}

int gmt_stall_ms(int full_wait_ms)
{
	return full_wait_ms > GMT_STALL_MIN_MS ? full_wait_ms : GMT_STALL_MIN_MS;
}

int gmt_writer_reclaim(struct gmt_writer *w)
{
	if (!w->failed && w->fd_lost) { /* also with nothing pending */
		struct stat st;
		if (reopen(w) != 0 || !fd_is_ours(w, &st)) {
			gmt_log("%s: the program closed or reused the trace's descriptor and the "
				"path no longer names it; tracing stops here, the program runs on",
				w->path);
			w->failed = 1;
		}
		__atomic_store_n(&w->fd_lost, 0, __ATOMIC_RELAXED);
	}
	return w->failed ? -1 : 0;
}

int gmt_writer_reopen(struct gmt_writer *w)
{
	w->may_reopen = 1;
	gmt_writer_reclaim(w);
	int rc = gmt_writer_flush(w);
	w->may_reopen = 0;
	return rc;
}

void gmt_writer_compress_init(struct gmt_writer *w)
{
	if (w->zstate != GMT_ZS_WANTED)
		return;
	const char *why;
	const struct gmt_zstd *z = gmt_zstd_get(&libc_dl, &why);
	w->zstate = GMT_ZS_OFF;
	if (!z) {
		char text[256];
		gmt_format(text, sizeof text, "zstd not available: chunks uncompressed (%s)", why);
		gmt_note(0, text); /* written by the next drain */
		return;
	}
	/* Its memory mapped here, once: compressing then never allocates
	 * (a static context), so the final flush never waits for malloc. */
	size_t ws = z->ZSTD_estimateCCtxSize && z->ZSTD_initStaticCCtx
			? z->ZSTD_estimateCCtxSize(ZSTD_LEVEL)
			: 0;
	void *mem = ws && !z->ZSTD_isError(ws) ? gmt_mem_alloc(ws) : NULL;
	if (mem && (w->cctx = z->ZSTD_initStaticCCtx(mem, ws))) {
		w->zws = mem;
		w->zws_len = ws;
	} else {
		gmt_mem_free(mem, ws);
		w->cctx = z->ZSTD_createCCtx();
	}
	if (w->cctx)
		w->zstate = GMT_ZS_ON;
}

/* The pending chunk compressed into w->zbuf: its length on disk, or 0 when
 * compressing fails or does not make it smaller. */
static size_t compress_chunk(struct gmt_writer *w, size_t payload)
{
	const struct gmt_zstd *z = gmt_zstd_get(&libc_dl, NULL);
	size_t need = GMT_CHUNK_HEADER_SIZE + gmt_chunk_zbound(z, payload);
	if (need > w->zcap) {
		uint8_t *b = gmt_mem_grow(w->zbuf, w->zcap, need); /* never malloc's */
		if (!b)
			return 0;
		w->zbuf = b;
		w->zcap = need;
	}
	return gmt_chunk_compress(z, w->cctx, ZSTD_LEVEL, w->zbuf + GMT_CHUNK_HEADER_SIZE,
				  w->chunk + GMT_CHUNK_HEADER_SIZE, payload);
}

int gmt_writer_flush(struct gmt_writer *w)
{
	if (w->failed)
		return -1;
	if (w->len <= GMT_CHUNK_HEADER_SIZE)
		return 0;
	uint32_t payload = (uint32_t)(w->len - GMT_CHUNK_HEADER_SIZE);
	size_t zlen = w->zstate == GMT_ZS_ON ? compress_chunk(w, payload) : 0;
	uint8_t *c = zlen ? w->zbuf : w->chunk;
	uint32_t len = zlen ? (uint32_t)zlen : payload;
	gmt_chunk_seal(c, zlen != 0, len, w->seq++);
	/* One write per chunk: a kill leaves whole chunks and one torn tail. */
	write_all(w, c, GMT_CHUNK_HEADER_SIZE + (size_t)len);
	if (w->fd_lost) { /* not written: pending until the trace is reopened */
		w->seq--;
		return 0;
	}
	w->len = GMT_CHUNK_HEADER_SIZE;
	return w->failed ? -1 : 0;
}

/* ---- opening --------------------------------------------------------- */

static const char *rank_string(void)
{
	static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return v;
	}
	return "0";
}

/* Expands %p %h %r %% into out. Returns -1 if it does not fit. */
static int expand_template(const char *t, char *out, size_t size)
{
	char host[256] = "unknown", pid[24];
	gethostname(host, sizeof host - 1);
	host[sizeof host - 1] = '\0';
	gmt_format(pid, sizeof pid, "%d", (int)getpid());
	size_t n = 0;
	for (; *t; t++) {
		const char *add = NULL;
		char one[2] = {*t, 0};
		if (*t == '%' && t[1]) {
			t++;
			add = *t == 'p' ? pid : *t == 'h' ? host : *t == 'r' ? rank_string() : NULL;
			if (!add) {
				one[0] = *t; /* %% and unknown ones: the character itself */
				add = one;
			}
		} else {
			add = one;
		}
		size_t k = strlen(add);
		if (n + k + 16 >= size) /* leave room for a .N suffix */
			return -1;
		memcpy(out + n, add, k);
		n += k;
	}
	out[n] = '\0';
	return 0;
}

static int create_exclusive(struct gmt_writer *w, const char *base)
{
	size_t blen = strlen(base);
	int has_ext = blen > 4 && !strcmp(base + blen - 4, ".gmt");
	for (int attempt = 0; attempt < 1000; attempt++) {
		if (!attempt) {
			memcpy(w->path, base, blen + 1);
		} else if (has_ext) { /* gpumemtrace.42.gmt -> gpumemtrace.42.1.gmt */
			memcpy(w->path, base, blen - 4);
			gmt_format(w->path + blen - 4, sizeof w->path - (blen - 4), ".%d.gmt",
				   attempt);
		} else {
			gmt_format(w->path, sizeof w->path, "%s.%d", base, attempt);
		}
		/* O_EXCL never follows a symlink and never truncates; 0600: a
		 * trace holds the command line and settings (private by default). */
		/* Stamped like a write: an open that does not return (a hung
		 * NFS mount) is seen by the thread waiting for the file
		 * (setup.c), which then goes on without it. */
		__atomic_store_n(&w->io_since, gmt_now_ns() | 1, __ATOMIC_RELEASE);
		int fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		__atomic_store_n(&w->io_since, 0, __ATOMIC_RELEASE);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -1;
	}
	errno = EEXIST;
	return -1;
}

/* Where the trace's descriptor goes: clear of the numbers a program takes
 * (it gets the lowest free one, and may close or dup2 onto 0-2), below the
 * soft RLIMIT_NOFILE, and not so high that the descriptor table grows
 * much. 1024 is also past what select() and daemons closing 3-1023 use. */
static int high_fd_floor(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= 2048)
		return 1024;
	int lim = (int)rl.rlim_cur;
	return lim - lim / 4 > 3 ? lim - lim / 4 : 3;
}

void gmt_fd_table_reserve(void)
{
	int err = errno, fd = eventfd(0, EFD_CLOEXEC);
	if (fd >= 0) {
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, high_fd_floor());
		if (hi >= 0)
			close(hi);
		close(fd);
	}
	errno = err;
}

int gmt_fd_high(int fd)
{
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, high_fd_floor());
	if (hi < 0)
		hi = fcntl(fd, F_DUPFD_CLOEXEC, 3); /* a tiny limit: the lowest above 2 */
	if (hi >= 0) {
		close(fd);
		return hi;
	}
	if (fd > 2)
		return fd; /* keep it where it is */
	int err = errno;
	close(fd);
	errno = err;
	return -1;
}

int gmt_writer_create(struct gmt_writer *w, const char *path_template, int stack_depth,
		      uint64_t start_mono)
{
	char base[4096];
	if (expand_template(path_template, base, sizeof base) < 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = create_exclusive(w, base);
	if (fd >= 0 && (fd = gmt_fd_high(fd)) < 0)
		unlink(w->path); /* no descriptor for it but 0-2: the program's */
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0) {
			int err = errno;
			close(fd);
			errno = err;
		}
		return -1;
	}
	w->fd = fd;
	w->dev = (uint64_t)st.st_dev;
	w->ino = (uint64_t)st.st_ino;
	w->failed = 0;
	w->written = 0;
	w->reopened = w->reopened_noted = 0;
	w->io_since = 0; /* a child's copy of its parent's write under way */
	/* absolute, for reopening it: the program may chdir before it closes fd */
	size_t n = 0;
	if (w->path[0] != '/' && getcwd(w->abs, sizeof w->abs - sizeof w->path - 1)) {
		n = strlen(w->abs);
		w->abs[n++] = '/';
	}
	memcpy(w->abs + n, w->path, strlen(w->path) + 1);
	w->len = GMT_CHUNK_HEADER_SIZE;

	uint8_t hdr[GMT_HEADER_SIZE] = {0};
	memcpy(hdr + GMT_HDR_MAGIC, GMT_MAGIC, GMT_MAGIC_LEN);
	gmt_put_le16(hdr + GMT_HDR_VERSION, GMT_FORMAT_VERSION);
	gmt_put_le16(hdr + GMT_HDR_HEADER_SIZE, GMT_HEADER_SIZE);
	hdr[GMT_HDR_ENDIAN] = GMT_ENDIAN_LITTLE;
	gmt_put_le32(hdr + GMT_HDR_FEATURES, stack_depth > 0 ? GMT_FEAT_STACKS : 0);
	/* The wall clock at start_mono, read now and moved back by the same span. */
	uint64_t now_mono = gmt_now_ns();
	if (!start_mono || start_mono > now_mono)
		start_mono = now_mono;
	gmt_put_le64(hdr + GMT_HDR_START_WALL, gmt_wall_ns() - (now_mono - start_mono));
	gmt_put_le64(hdr + GMT_HDR_START_MONO, start_mono);
	gmt_put_le32(hdr + GMT_HDR_PID, (uint32_t)getpid());
	write_all(w, hdr, sizeof hdr);
	return w->failed ? -1 : 0;
}

int gmt_writer_list(const struct gmt_writer *w, const char *list)
{
	/* Called under the setup lock: one buffer does. */
	static char line[PATH_MAX + sizeof w->path + 2];
	size_t n = 0;
	if (w->path[0] != '/') {
		if (!getcwd(line, PATH_MAX))
			return -1;
		n = strlen(line);
		line[n++] = '/';
	}
	size_t k = strlen(w->path);
	memcpy(line + n, w->path, k + 1); /* the NUL ends the entry */
	n += k + 1;
	/* O_NONBLOCK: a FIFO put there must not hang the program. */
	int fd = open(list, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t put = write(fd, line, n);
	int err = errno;
	close(fd);
	if (put == (ssize_t)n)
		return 0;
	errno = put < 0 ? err : EIO;
	return -1;
}

/* Closes our descriptor, unless the program has made it one of its own. */
void gmt_writer_file_abandon(struct gmt_writer *w)
{
	struct stat st;
	if (fd_is_ours(w, &st))
		close(w->fd);
	w->fd = -1;
	if (w->cctx && !w->zws)
		gmt_zstd_get(&libc_dl, NULL)->ZSTD_freeCCtx(w->cctx);
	w->cctx = NULL;
	gmt_mem_free(w->zws, w->zws_len);
	w->zws = NULL;
	w->zws_len = 0;
	gmt_mem_free(w->zbuf, w->zcap);
	w->zbuf = NULL;
	w->zcap = 0;
	if (w->chunk)
		munmap(w->chunk, w->cap);
	w->chunk = NULL;
	w->len = w->cap = 0;
}
