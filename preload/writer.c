#include "preload/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
/* Out of memory, an entry is left out of its table (and freed): the
 * tracer goes on. uthash's default exit(-1) killed the program, and from
 * the core it would now call our own exit hook. */
#define HASH_NONFATAL_OOM	 1
#define uthash_nonfatal_oom(obj) free(obj)
#include <uthash.h>

#include "common/codec.h"
#include "common/fwhist.h"
#include "gpumemtrace/format.h"
#include "common/log.h"
#include "common/symbolize.h"
#include "preload/tracer.h"
#include "common/zstd.h"
#include "preload/real.h"

/* libzstd is loaded through libc's loader, never our dlopen/dlsym hooks. */
static const struct gmt_dl libc_dl = {gmt_libc_dlopen, gmt_libc_dlsym, gmt_libc_dlclose};

#define CHUNK_TARGET (256u << 10) /* write a chunk once this much is pending */
#define BATCH_TARGET (64u << 10)  /* close an EVENTS record at this size */
#define STACK_BATCH  4096	  /* nodes per STACK record */
/* zstd level: 1 and the negative (faster) levels measured in
 * docs/performance.md "Trace size". */
#define ZSTD_LEVEL 1

enum { ZS_OFF = 0, ZS_WANTED = 1, ZS_ON = 2 };

/* The environment that shapes GPU memory, and the process's place in its
 * job, kept in the process record: these names, then every variable with
 * one of recorded_prefixes (at most RECORDED_PREFIXED of them). */
static const char *const recorded_env[] = {
    "CUDA_VISIBLE_DEVICES",
    "CUDA_MODULE_LOADING",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    "TF_GPU_ALLOCATOR",
    "TF_ENABLE_GPU_GARBAGE_COLLECTION",
    "TF_DEVICE_MIN_SYS_MEMORY_IN_MB",
    "XLA_CLIENT_MEM_FRACTION",
    "CUBLAS_WORKSPACE_CONFIG",
    "CUBLASLT_WORKSPACE_SIZE",
    "CUPY_GPU_MEMORY_LIMIT",
    /* which process of a job this is, for the reports on several traces */
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "SLURM_PROCID",
};
static const char *const recorded_prefixes[] = {"XLA_PYTHON_CLIENT_", "NCCL_"};
#define RECORDED_PREFIXED 32

extern char **environ;

/* The value of environ's entry e when its name has one of
 * recorded_prefixes; *klen the name's length. */
static const char *prefixed_env(const char *e, size_t *klen)
{
	const char *eq = strchr(e, '=');
	if (!eq)
		return NULL;
	for (size_t i = 0; i < sizeof recorded_prefixes / sizeof *recorded_prefixes; i++)
		if (strncmp(e, recorded_prefixes[i], strlen(recorded_prefixes[i])) == 0) {
			*klen = (size_t)(eq - e);
			return eq + 1;
		}
	return NULL;
}

struct gmt_ipset {
	uint64_t ip;
	UT_hash_handle hh;
};

static uint64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- chunk buffer ---------------------------------------------------- */

/* Room for `n` more payload bytes; writes the pending chunk first when a
 * record would push it past its target size. */
static uint8_t *room(struct gmt_writer *w, size_t n)
{
	if (w->len > GMT_CHUNK_HEADER_SIZE && w->len + n > CHUNK_TARGET)
		gmt_writer_flush(w);
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

static void commit(struct gmt_writer *w, uint8_t *end)
{
	w->len = (size_t)(end - w->chunk);
}

static uint8_t *put_str(uint8_t *p, const void *s, size_t n)
{
	p = gmt_put_varint(p, n);
	memcpy(p, s, n);
	return p + n;
}

/* Whether w->fd is still the file we created (one fstat). */
static int fd_is_ours(const struct gmt_writer *w, struct stat *st)
{
	return w->fd >= 0 && fstat(w->fd, st) == 0 && (uint64_t)st->st_dev == w->dev &&
	       (uint64_t)st->st_ino == w->ino;
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
	 * maybe opened a file of its own on its number: never write there. */
	struct stat st;
	if (!w->failed && !fd_is_ours(w, &st)) {
		gmt_log("%s: descriptor %d is no longer the trace (the program closed or "
			"reused it); tracing stops here, the program runs on",
			w->path, w->fd);
		w->failed = 1;
		w->fd = -1; /* not ours to write, nor to close */
	}
	/* Someone deleted or truncated the file: writing on would leave a
	 * hole of zeros (or nothing at all) instead of a readable trace. */
	if (!w->failed && w->written && (st.st_nlink == 0 || (uint64_t)st.st_size < w->written)) {
		gmt_log("%s was %s under us; tracing stops here, the program runs on", w->path,
			st.st_nlink == 0 ? "deleted" : "truncated");
		w->failed = 1;
	}
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
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void gmt_writer_compress_init(struct gmt_writer *w)
{
	if (w->zstate != ZS_WANTED)
		return;
	const char *why;
	const struct gmt_zstd *z = gmt_zstd_get(&libc_dl, &why);
	w->zstate = ZS_OFF;
	if (!z) {
		char text[256];
		gmt_format(text, sizeof text, "zstd not available: chunks uncompressed (%s)", why);
		gmt_writer_note(w, 0, text);
		return;
	}
	if ((w->cctx = z->ZSTD_createCCtx()))
		w->zstate = ZS_ON;
}

/* The pending chunk compressed into w->zbuf: its length on disk, or 0 when
 * compressing fails or does not make it smaller. */
static size_t compress_chunk(struct gmt_writer *w, size_t payload)
{
	const struct gmt_zstd *z = gmt_zstd_get(&libc_dl, NULL);
	size_t need = GMT_CHUNK_HEADER_SIZE + GMT_VARINT_MAX + z->ZSTD_compressBound(payload);
	if (need > w->zcap) {
		uint8_t *b = realloc(w->zbuf, need);
		if (!b)
			return 0;
		w->zbuf = b;
		w->zcap = need;
	}
	uint8_t *p = gmt_put_varint(w->zbuf + GMT_CHUNK_HEADER_SIZE, payload);
	size_t head = (size_t)(p - w->zbuf) - GMT_CHUNK_HEADER_SIZE;
	size_t n = z->ZSTD_compressCCtx(w->cctx, p, w->zcap - (size_t)(p - w->zbuf),
					w->chunk + GMT_CHUNK_HEADER_SIZE, payload, ZSTD_LEVEL);
	if (z->ZSTD_isError(n) || head + n >= payload)
		return 0;
	return head + n;
}

int gmt_writer_flush(struct gmt_writer *w)
{
	if (w->failed)
		return -1;
	if (w->len <= GMT_CHUNK_HEADER_SIZE)
		return 0;
	uint32_t payload = (uint32_t)(w->len - GMT_CHUNK_HEADER_SIZE);
	size_t zlen = w->zstate == ZS_ON ? compress_chunk(w, payload) : 0;
	uint8_t *c = zlen ? w->zbuf : w->chunk;
	uint32_t len = zlen ? (uint32_t)zlen : payload;
	gmt_put_le32(c, zlen ? GMT_CHUNK_MAGIC_ZSTD : GMT_CHUNK_MAGIC);
	gmt_put_le32(c + 4, len);
	gmt_put_le32(c + 8, w->seq++);
	gmt_put_le32(c + 12, gmt_crc32c(0, c + GMT_CHUNK_HEADER_SIZE, len));
	/* One write per chunk: a kill leaves whole chunks and one torn tail. */
	write_all(w, c, GMT_CHUNK_HEADER_SIZE + (size_t)len);
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
		/* O_EXCL never follows a symlink and never truncates. */
		int fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
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

/* Moves fd to a high close-on-exec number, never 0-2: with stdout closed,
 * open() hands us 1, and the program's printf would land in the trace.
 * Returns the new fd, or -1 (errno set; fd closed) when only 0-2 were free. */
static int move_high(int fd)
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

static size_t read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t n = 0;
	ssize_t k;
	while (n < size && (k = read(fd, buf + n, size - n)) > 0)
		n += (size_t)k;
	close(fd);
	return n;
}

static void put_process(struct gmt_writer *w)
{
	char host[256] = "", exe[4096] = "";
	gethostname(host, sizeof host - 1);
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[el > 0 ? el : 0] = '\0';
	static char cmdline[32768];
	size_t cl = read_small_file("/proc/self/cmdline", cmdline, sizeof cmdline);

	size_t need = 64 + strlen(host) + strlen(exe) + cl + 2 * GMT_VARINT_MAX * 64;
	/* Read once: what is sized is what is written, should the program
	 * change its environment meanwhile. */
	struct {
		const char *k, *v;
		size_t kl, vl;
	} env[sizeof recorded_env / sizeof *recorded_env + RECORDED_PREFIXED];
	size_t nenv = 0, nprefixed = 0;
	for (size_t i = 0; i < sizeof recorded_env / sizeof *recorded_env; i++) {
		const char *v = getenv(recorded_env[i]);
		if (v)
			env[nenv++] = (typeof(env[0])){recorded_env[i], v, strlen(recorded_env[i]),
						       strlen(v)};
	}
	for (char **e = environ; e && *e && nprefixed < RECORDED_PREFIXED; e++) {
		size_t kl;
		const char *v = prefixed_env(*e, &kl);
		if (v) {
			env[nenv++] = (typeof(env[0])){*e, v, kl, strlen(v)};
			nprefixed++;
		}
	}
	for (size_t i = 0; i < nenv; i++)
		need += env[i].kl + env[i].vl + 2 * GMT_VARINT_MAX;
	uint8_t *p = room(w, need);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_PROCESS);
	p = gmt_put_varint(p, (uint64_t)getpid());
	p = gmt_put_varint(p, (uint64_t)getppid());
	p = gmt_put_varint(p, wall_ns());
	p = put_str(p, host, strlen(host));
	p = put_str(p, exe, strlen(exe));
	uint64_t argc = 0;
	for (size_t i = 0; i < cl; i++)
		argc += cmdline[i] == '\0';
	if (cl && cmdline[cl - 1] != '\0')
		argc++; /* truncated last argument */
	p = gmt_put_varint(p, argc);
	for (size_t i = 0; i < cl;) {
		size_t k = strnlen(cmdline + i, cl - i);
		p = put_str(p, cmdline + i, k);
		i += k + 1;
	}
	p = gmt_put_varint(p, nenv);
	for (size_t i = 0; i < nenv; i++) {
		p = put_str(p, env[i].k, env[i].kl);
		p = put_str(p, env[i].v, env[i].vl);
	}
	commit(w, p);
}

int gmt_writer_open(struct gmt_writer *w, const char *path_template, int stack_depth, int compress,
		    uint64_t start_mono)
{
	char base[4096];
	if (expand_template(path_template, base, sizeof base) < 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = create_exclusive(w, base);
	if (fd >= 0 && (fd = move_high(fd)) < 0)
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
	w->len = GMT_CHUNK_HEADER_SIZE;
	w->ev_tid = -1;

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
	gmt_put_le64(hdr + GMT_HDR_START_WALL, wall_ns() - (now_mono - start_mono));
	gmt_put_le64(hdr + GMT_HDR_START_MONO, start_mono);
	gmt_put_le32(hdr + GMT_HDR_PID, (uint32_t)getpid());
	write_all(w, hdr, sizeof hdr);

	put_process(w);
	gmt_writer_scan_modules(w);
	gmt_writer_flush(w); /* on the hook path: uncompressed */
	w->zstate = compress ? ZS_WANTED : ZS_OFF;
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

static void free_state(struct gmt_writer *w)
{
	struct gmt_ipset *e, *t;
	HASH_ITER(hh, w->symbolized, e, t)
	{
		HASH_DEL(w->symbolized, e);
		free(e);
	}
	gmt_symbolizer_free(w->sym);
	gmt_stacks_reset(&w->stacks);
	gmt_modules_reset(&w->modules);
	if (w->cctx)
		gmt_zstd_get(&libc_dl, NULL)->ZSTD_freeCCtx(w->cctx);
	free(w->zbuf);
	if (w->chunk)
		munmap(w->chunk, w->cap);
	free(w->ev);
	for (int i = 0; i < GMT_EV_COLUMNS; i++)
		free(w->col[i]);
	memset(w, 0, sizeof *w);
	w->fd = -1;
}

/* Closes our descriptor, unless the program has made it one of its own. */
static void close_ours(struct gmt_writer *w)
{
	struct stat st;
	if (fd_is_ours(w, &st))
		close(w->fd);
}

void gmt_writer_close(struct gmt_writer *w)
{
	gmt_writer_flush(w);
	close_ours(w);
	free_state(w);
}

void gmt_writer_abandon(struct gmt_writer *w)
{
	close_ours(w);
	free_state(w);
}

/* ---- records --------------------------------------------------------- */

void gmt_writer_scan_modules(struct gmt_writer *w)
{
	gmt_modules_scan(&w->modules);
	for (; w->modules_emitted < w->modules.n; w->modules_emitted++) {
		const struct gmt_module *m = &w->modules.v[w->modules_emitted];
		size_t plen = strlen(m->path);
		uint8_t *p = room(w, plen + m->build_id_len + 8 * GMT_VARINT_MAX);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_MODULE);
		p = gmt_put_varint(p, m->id);
		p = gmt_put_varint(p, m->load_bias);
		p = gmt_put_varint(p, m->start);
		p = gmt_put_varint(p, m->end);
		p = put_str(p, m->path, plen);
		p = put_str(p, m->build_id, m->build_id_len);
		commit(w, p);
	}
}

/* Keeps what each query gave at some flush: at the end the driver may be
 * gone (seen on an H100: cuDeviceGet failing at exit, after the runtime's
 * teardown), and what an earlier flush learnt is still true. */
static void merge_device_info(struct gmt_device_info *into, const struct gmt_device_info *d)
{
	static const uint8_t zero[16];
	if (d->name[0])
		memcpy(into->name, d->name, sizeof into->name);
	if (memcmp(d->uuid, zero, sizeof zero))
		memcpy(into->uuid, d->uuid, sizeof into->uuid);
	if (d->total_bytes)
		into->total_bytes = d->total_bytes;
	if (d->cc_major)
		into->cc_major = d->cc_major, into->cc_minor = d->cc_minor;
	if (d->driver_version)
		into->driver_version = d->driver_version;
}

static int device_info_complete(const struct gmt_device_info *d)
{
	static const uint8_t zero[16];
	return d->name[0] && memcmp(d->uuid, zero, sizeof zero) && d->total_bytes && d->cc_major &&
	       d->driver_version;
}

/* How long a device whose facts are incomplete waits for the rest. */
#define DEVICE_INFO_WAIT_NS (5ull * 1000000000u)

int gmt_device_facts_query(struct gmt_device_facts *f, const uint8_t *skip)
{
	int n = gmt_driver_device_count();
	if (n > GMT_WRITER_MAX_DEVICES)
		n = GMT_WRITER_MAX_DEVICES;
	if (n > f->n)
		f->n = n;
	for (int i = 0; i < f->n; i++) {
		if (skip && skip[i])
			continue;
		struct gmt_device_info d;
		char why[sizeof f->why[0]];
		int rc = gmt_driver_device_info(i, &d, why, sizeof why);
		if (rc >= 0) {
			f->seen[i] = 1;
			merge_device_info(&f->d[i], &d);
		}
		if (rc != 0 && why[0] && !f->why[i][0])
			memcpy(f->why[i], why, sizeof why);
	}
	return n;
}

void gmt_device_facts_merge(struct gmt_device_facts *into, const struct gmt_device_facts *from)
{
	if (from->n > into->n)
		into->n = from->n;
	for (int i = 0; i < from->n; i++) {
		if (from->seen[i]) {
			into->seen[i] = 1;
			merge_device_info(&into->d[i], &from->d[i]);
		}
		if (from->why[i][0] && !into->why[i][0])
			memcpy(into->why[i], from->why[i], sizeof into->why[i]);
	}
}

void gmt_writer_devices(struct gmt_writer *w)
{
	if (w->devices_done)
		return;
	struct gmt_device_facts *f = &w->devices;
	gmt_device_facts_query(f, w->devices_written);
	if (!f->n)
		return; /* the program has not initialized CUDA yet: ask again later */
	uint64_t now = gmt_now_ns();
	if (!w->devices_first_ns)
		w->devices_first_ns = now;
	int give_up = w->devices_settle || now - w->devices_first_ns >= DEVICE_INFO_WAIT_NS;
	int pending = 0;
	for (int i = 0; i < f->n; i++) {
		const struct gmt_device_info *d = &f->d[i];
		if (w->devices_written[i] || !f->seen[i])
			continue;
		/* A complete device is written at once; an incomplete one waits
		 * for later flushes, then goes as it is with a NOTE. */
		int complete = device_info_complete(d);
		if (!complete && !give_up) {
			pending = 1;
			continue;
		}
		if (!complete) {
			char text[240];
			gmt_format(text, sizeof text,
				   "device %d: %s; its DEVICE record lacks what that query gives",
				   i, f->why[i][0] ? f->why[i] : "a query failed");
			gmt_note(1, text);
		}
		size_t nl = strnlen(d->name, sizeof d->name);
		uint8_t *p = room(w, nl + 16 + 8 * GMT_VARINT_MAX);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_DEVICE);
		p = gmt_put_varint(p, gmt_zigzag(i));
		p = put_str(p, d->name, nl);
		p = put_str(p, d->uuid, sizeof d->uuid);
		p = gmt_put_varint(p, d->total_bytes);
		p = gmt_put_varint(p, (uint64_t)d->cc_major);
		p = gmt_put_varint(p, (uint64_t)d->cc_minor);
		p = gmt_put_varint(p, (uint64_t)d->driver_version);
		commit(w, p);
		w->devices_written[i] = 1;
	}
	if (!pending || give_up)
		w->devices_done = 1;
}

/* Stack nodes must be in the file before the events that name them. */
static void put_new_nodes(struct gmt_writer *w)
{
	while (w->stacks.emitted < w->stacks.n) {
		uint32_t first = w->stacks.emitted + 1;
		uint32_t count = w->stacks.n - w->stacks.emitted;
		if (count > STACK_BATCH)
			count = STACK_BATCH;
		uint8_t *p = room(w, (size_t)count * 2 * GMT_VARINT_MAX + 2 * GMT_VARINT_MAX);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_STACK);
		p = gmt_put_varint(p, count);
		for (uint32_t id = first; id < first + count; id++) {
			p = gmt_put_varint(p, w->stacks.parent[id]);
			p = gmt_put_varint(p, w->stacks.ip[id]);
		}
		commit(w, p);
		w->stacks.emitted += count;
	}
}

void gmt_writer_end_batch(struct gmt_writer *w)
{
	put_new_nodes(w);
	if (!w->ev_count)
		return;
	int cols = w->ev_cols;
	uint8_t *p = room(w, w->ev_len + (4 + GMT_EV_COLUMNS) * GMT_VARINT_MAX);
	if (!p) { /* out of memory: counted as lost, never silent */
		w->lost += w->ev_count;
		w->events -= w->ev_count;
	}
	if (p) {
		p = gmt_put_varint(p, cols ? GMT_TAG_EVENTCOLS : GMT_TAG_EVENTS);
		p = gmt_put_varint(p, (uint64_t)w->ev_tid);
		p = gmt_put_varint(p, w->ev_base);
		p = gmt_put_varint(p, w->ev_count);
		if (cols) {
			for (int i = 0; i < GMT_EV_COLUMNS; i++)
				p = gmt_put_varint(p, w->ev_col[i]);
			for (int i = 0; i < GMT_EV_COLUMNS; i++) {
				memcpy(p, w->col[i], w->ev_col[i]);
				p += w->ev_col[i];
			}
		} else {
			memcpy(p, w->ev, w->ev_len);
			p += w->ev_len;
		}
		commit(w, p);
	}
	w->ev_len = 0;
	memset(w->ev_col, 0, sizeof w->ev_col);
	w->ev_count = 0;
	w->ev_tid = -1;
}

/* Columns for EVENTCOLS batches, made on the first one; 0 on failure (the
 * batch is then written as rows). A batch ends once it reaches
 * BATCH_TARGET, so no column outgrows that plus one event. */
static int have_columns(struct gmt_writer *w)
{
	for (int i = 0; i < GMT_EV_COLUMNS; i++)
		if (!w->col[i] && !(w->col[i] = malloc(BATCH_TARGET + 16 * GMT_VARINT_MAX)))
			return 0;
	return 1;
}

/* The event buffers, made on the flush thread as it starts: a process
 * that exhausts its memory later (a tight RLIMIT_AS) still has them for
 * the records its rings hold at exit. Failing here is harmless: they are
 * asked for again when needed. */
void gmt_writer_reserve(struct gmt_writer *w)
{
	have_columns(w);
	if (!w->ev_cap && (w->ev = malloc(BATCH_TARGET + 1024)))
		w->ev_cap = BATCH_TARGET + 1024;
}

/* One event, appended to the open batch (layout in format.h). By row
 * (EVENTS), each event's fields together:
 *
 *   head  v (api << 4) | dev_changed << 3 | has_aux2 << 2 | has_aux << 1 | failed
 *   dt    v time - previous time
 *   dptr  z ptr - previous ptr
 *   size  v
 *   dstk  z stack - previous stack
 *   [result v] [device z] [aux v] [aux2 v]
 *
 * By column (EVENTCOLS, when chunks are compressed), the same fields of
 * every event together, in six columns: heads | dts | ptrs, each whole, 8
 * bytes LE (a free repeats its allocation's bytes, which zstd matches) |
 * sizes | dstks | the optional fields. zstd finds like bytes together.
 */
static void put_event(struct gmt_writer *w, int tid, const struct gmt_raw_event *e, uint64_t time,
		      uint32_t stack)
{
	if (w->ev_count &&
	    (w->ev_tid != tid || w->ev_len >= BATCH_TARGET || time < w->ev_prev_time))
		gmt_writer_end_batch(w);
	if (!w->ev_count) {
		w->ev_tid = tid;
		w->ev_base = w->ev_prev_time = time;
		w->ev_prev_ptr = 0;
		w->ev_prev_stack = 0;
		w->ev_prev_dev = 0;
		w->ev_cols = w->zstate == ZS_ON && have_columns(w);
	}
	if (!w->ev_cols && w->ev_len + 10 * GMT_VARINT_MAX > w->ev_cap) {
		size_t cap = w->ev_cap ? w->ev_cap * 2 : BATCH_TARGET + 1024;
		uint8_t *b = realloc(w->ev, cap);
		if (!b) {
			w->lost++; /* out of memory: counted, never silent */
			return;
		}
		w->ev = b;
		w->ev_cap = cap;
	}
	unsigned head =
	    (unsigned)e->api << GMT_EV_API_SHIFT | (e->flags & (GMT_EV_HAS_AUX | GMT_EV_HAS_AUX2));
	if (e->result)
		head |= GMT_EV_FAILED;
	if (e->device != w->ev_prev_dev)
		head |= GMT_EV_DEV_CHANGED;
	uint64_t dt = time - w->ev_prev_time;
	uint64_t dstk = gmt_zigzag((int64_t)stack - (int64_t)w->ev_prev_stack);
	uint8_t *p;
	if (w->ev_cols) {
		uint32_t *n = w->ev_col;
		n[0] = (uint32_t)(gmt_put_varint(w->col[0] + n[0], head) - w->col[0]);
		n[1] = (uint32_t)(gmt_put_varint(w->col[1] + n[1], dt) - w->col[1]);
		gmt_put_le64(w->col[2] + n[2], e->ptr);
		n[2] += 8;
		n[3] = (uint32_t)(gmt_put_varint(w->col[3] + n[3], e->size) - w->col[3]);
		n[4] = (uint32_t)(gmt_put_varint(w->col[4] + n[4], dstk) - w->col[4]);
		p = w->col[5] + n[5];
	} else {
		p = w->ev + w->ev_len;
		p = gmt_put_varint(p, head);
		p = gmt_put_varint(p, dt);
		p = gmt_put_varint(p, gmt_zigzag((int64_t)(e->ptr - w->ev_prev_ptr)));
		p = gmt_put_varint(p, e->size);
		p = gmt_put_varint(p, dstk);
	}
	if (head & GMT_EV_FAILED)
		p = gmt_put_varint(p, e->result);
	if (head & GMT_EV_DEV_CHANGED)
		p = gmt_put_varint(p, gmt_zigzag(e->device));
	if (head & GMT_EV_HAS_AUX)
		p = gmt_put_varint(p, e->aux);
	if (head & GMT_EV_HAS_AUX2)
		p = gmt_put_varint(p, e->aux2);
	if (w->ev_cols) {
		uint32_t *n = w->ev_col;
		n[5] = (uint32_t)(p - w->col[5]);
		w->ev_len = (size_t)n[0] + n[1] + n[2] + n[3] + n[4] + n[5];
	} else {
		w->ev_len = (size_t)(p - w->ev);
	}
	w->ev_count++;
	w->ev_prev_time = time;
	w->ev_prev_ptr = e->ptr;
	w->ev_prev_stack = stack;
	w->ev_prev_dev = e->device;
	w->events++;
}

static void put_thread(struct gmt_writer *w, int tid, const char *name, size_t len)
{
	gmt_writer_end_batch(w);
	uint8_t *p = room(w, len + 3 * GMT_VARINT_MAX);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_THREAD);
	p = gmt_put_varint(p, (uint64_t)tid);
	p = put_str(p, name, len);
	commit(w, p);
}

/* ---- a framework's allocator history (preload/fwhist.c fills the rings) ---- */

enum { FW_ENTRIES_MAX = 16384 / sizeof(struct gmt_raw_fwentry) };

static void put_fwsnap(struct gmt_writer *w, int tid, const uint8_t *body)
{
	uint32_t n;
	memcpy(&n, body, sizeof n);
	uint8_t *p = room(w, 2 * GMT_VARINT_MAX + n);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_FWSNAP);
	p = gmt_put_varint(p, (uint64_t)tid);
	memcpy(p, body + sizeof n, n);
	commit(w, p + n);
}

/* The stacks first (their nodes precede the record), then the record. */
static void put_fwtrace(struct gmt_writer *w, const struct gmt_raw_fwtrace *r)
{
	uint32_t stack[FW_ENTRIES_MAX];
	uint32_t n = r->count < FW_ENTRIES_MAX ? r->count : FW_ENTRIES_MAX;
	const struct gmt_raw_fwentry *e = (const void *)(r + 1);
	const uint64_t *ips = (const void *)(e + r->count);
	for (uint32_t i = 0; i < n; ips += e[i].nframes, i++)
		stack[i] = e[i].nframes ? gmt_stacks_intern(&w->stacks, ips, e[i].nframes) : 0;
	gmt_writer_end_batch(w);
	uint8_t *p = room(w, GMT_FW_TRACE_HEAD_MAX + (size_t)n * GMT_FW_ENTRY_MAX);
	if (!p)
		return;
	struct gmt_fw_enc st;
	p = gmt_fw_put_trace_head(p, &st, r->seq, r->device, r->flags, r->base_time_us, n);
	for (uint32_t i = 0; i < n; i++)
		p = gmt_fw_put_entry(p, &st, e[i].action, e[i].addr, e[i].size, e[i].stream,
				     e[i].time_us, stack[i]);
	commit(w, p);
}

static void put_fwseg(struct gmt_writer *w, const struct gmt_raw_fwseg *r)
{
	uint32_t stack[FW_ENTRIES_MAX];
	uint32_t n = r->count < FW_ENTRIES_MAX ? r->count : FW_ENTRIES_MAX;
	const uint64_t *ips = (const void *)(r + 1);
	uint32_t seg_stack = r->nframes ? gmt_stacks_intern(&w->stacks, ips, r->nframes) : 0;
	const struct gmt_raw_fwblock *b = (const void *)(ips + r->nframes);
	ips = (const void *)(b + r->count);
	for (uint32_t i = 0; i < n; ips += b[i].nframes, i++)
		stack[i] = b[i].nframes ? gmt_stacks_intern(&w->stacks, ips, b[i].nframes) : 0;
	gmt_writer_end_batch(w);
	uint8_t *p = room(w, GMT_FW_SEG_HEAD_MAX + (size_t)n * GMT_FW_BLOCK_MAX);
	if (!p)
		return;
	struct gmt_fw_enc st;
	p = gmt_fw_put_seg_head(p, &st, r->seq, r->device, r->address, r->total_size, r->stream,
				r->flags, r->pool_a, r->pool_b, seg_stack, n);
	for (uint32_t i = 0; i < n; i++)
		p = gmt_fw_put_block(p, &st, b[i].address, b[i].size, b[i].requested, b[i].state,
				     stack[i]);
	commit(w, p);
}

void gmt_writer_ring_record(struct gmt_writer *w, struct gmt_ring *r, const struct gmt_ring_hdr *h)
{
	const uint8_t *body = (const uint8_t *)(h + 1);
	if (h->type == GMT_RING_EVENT) {
		const struct gmt_raw_event *e = (const void *)body;
		uint32_t stack =
		    h->nframes
			? gmt_stacks_intern(&w->stacks, (const uint64_t *)(e + 1), h->nframes)
			: 0;
		/* A thread's stamps never go back: a free's, taken without a
		 * fence, may read a few ns before the stamp above it (clock.h). */
		uint64_t time = e->time_ns > r->last_time ? e->time_ns : r->last_time;
		r->last_time = time;
		put_event(w, r->tid, e, time, stack);
	} else if (h->type == GMT_RING_MEMINFO) {
		const struct gmt_raw_meminfo *m = (const void *)body;
		gmt_writer_end_batch(w); /* after the failed event it describes */
		uint8_t *p = room(w, 7 * GMT_VARINT_MAX);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_MEMINFO);
		p = gmt_put_varint(p, (uint64_t)r->tid);
		p = gmt_put_varint(p, m->time_ns);
		p = gmt_put_varint(p, gmt_zigzag(m->device));
		p = gmt_put_varint(p, m->free_bytes);
		p = gmt_put_varint(p, m->total_bytes);
		p = gmt_put_varint(p, m->api);
		commit(w, p);
	} else if (h->type == GMT_RING_SAMPLE) {
		const struct gmt_raw_sample *sm = (const void *)body;
		gmt_writer_end_batch(w); /* after the events the thread recorded before it */
		uint8_t *p = room(w, 8 * GMT_VARINT_MAX + 1 + sizeof sm->uuid);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_SAMPLE);
		p = gmt_put_varint(p, sm->time_ns);
		p = gmt_put_varint(p, sm->nvml_index);
		p = gmt_put_varint(p, sizeof sm->uuid);
		memcpy(p, sm->uuid, sizeof sm->uuid);
		p += sizeof sm->uuid;
		p = gmt_put_varint(p, sm->used_bytes);
		p = gmt_put_varint(p, sm->total_bytes);
		p = gmt_put_varint(p, sm->flags);
		p = gmt_put_varint(p, sm->process_used_bytes);
		p = gmt_put_varint(p, sm->reason);
		commit(w, p);
	} else if (h->type == GMT_RING_RANGE) {
		const struct gmt_raw_range *rr = (const void *)body;
		size_t n = h->nframes;
		uint8_t *p = room(w, 7 * GMT_VARINT_MAX + n);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_RANGE);
		p = gmt_put_varint(p, (uint64_t)r->tid);
		p = gmt_put_varint(p, rr->time_ns);
		p = gmt_put_varint(p, rr->op);
		p = gmt_put_varint(p, rr->id);
		p = gmt_put_varint(p, rr->source);
		p = gmt_put_varint(p, n);
		memcpy(p, rr + 1, n);
		commit(w, p + n);
	} else if (h->type == GMT_RING_PYFRAME) {
		const struct gmt_raw_pyframe *pf = (const void *)body;
		const uint8_t *fn = (const uint8_t *)(pf + 1), *fl = fn + pf->function_len;
		uint8_t *p = room(w, 5 * GMT_VARINT_MAX + pf->function_len + pf->file_len);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_PYFRAME);
		p = gmt_put_varint(p, pf->id);
		p = gmt_put_varint(p, pf->function_len);
		memcpy(p, fn, pf->function_len);
		p += pf->function_len;
		p = gmt_put_varint(p, pf->file_len);
		memcpy(p, fl, pf->file_len);
		p += pf->file_len;
		p = gmt_put_varint(p, pf->line);
		commit(w, p);
	} else if (h->type == GMT_RING_COUNTERS) {
		size_t n = h->nframes; /* the body, encoded by gmt_record_counters */
		uint8_t *p = room(w, 2 * GMT_VARINT_MAX + n);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_COUNTERS);
		p = gmt_put_varint(p, (uint64_t)r->tid);
		memcpy(p, body, n);
		commit(w, p + n);
	} else if (h->type == GMT_RING_THREAD) {
		put_thread(w, r->tid, (const char *)body, strnlen((const char *)body, h->nframes));
	} else if (h->type == GMT_RING_FWSNAP) {
		gmt_writer_end_batch(w);
		put_fwsnap(w, r->tid, body);
	} else if (h->type == GMT_RING_FWTRACE) {
		put_fwtrace(w, (const void *)body);
	} else if (h->type == GMT_RING_FWSEG) {
		put_fwseg(w, (const void *)body);
	}
}

void gmt_writer_lost(struct gmt_writer *w, int tid, uint64_t count, uint64_t time_ns)
{
	gmt_writer_end_batch(w);
	uint8_t *p = room(w, 4 * GMT_VARINT_MAX);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_LOST);
	p = gmt_put_varint(p, (uint64_t)tid);
	p = gmt_put_varint(p, count);
	p = gmt_put_varint(p, time_ns);
	commit(w, p);
	w->lost += count;
}

void gmt_writer_note(struct gmt_writer *w, int level, const char *text)
{
	gmt_writer_end_batch(w);
	size_t n = strlen(text);
	uint8_t *p = room(w, n + 3 * GMT_VARINT_MAX);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_NOTE);
	p = gmt_put_varint(p, (uint64_t)level);
	p = put_str(p, text, n);
	commit(w, p);
}

/* Names every frame the trace holds that has not been named yet, so the
 * trace reads on a machine without these binaries. Returns how many
 * SYMBOL records it added. */
int gmt_writer_symbols(struct gmt_writer *w)
{
	int added = 0;
	gmt_writer_end_batch(w);
	if (w->nodes_symbolized >= w->stacks.n)
		return 0;
	gmt_writer_scan_modules(w);
	if (!w->sym && !(w->sym = gmt_symbolizer_new()))
		return 0;
	struct gmt_symbolizer *sym = w->sym;
	for (; w->sym_modules < w->modules.n; w->sym_modules++) {
		const struct gmt_module *m = &w->modules.v[w->sym_modules];
		gmt_symbolizer_add_module(sym, m->path, m->load_bias, m->start, m->end, NULL, 0);
	}
	for (uint32_t id = w->nodes_symbolized + 1; id <= w->stacks.n; id++) {
		uint64_t ip = w->stacks.ip[id];
		if (GMT_IS_PYFRAME_IP(ip))
			continue; /* named by its PYFRAME record */
		struct gmt_ipset *seen;
		HASH_FIND(hh, w->symbolized, &ip, sizeof ip, seen);
		if (seen || !(seen = calloc(1, sizeof *seen)))
			continue;
		seen->ip = ip;
		HASH_ADD(hh, w->symbolized, ip, sizeof seen->ip, seen);

		const struct gmt_module *m = gmt_modules_find(&w->modules, ip);
		struct gmt_symbol s;
		/* A return address points after the call: name the call itself. */
		gmt_symbolize(sym, ip - 1, &s);
		size_t fl = s.function ? strlen(s.function) : 0, il = s.file ? strlen(s.file) : 0;
		uint8_t *p = room(w, fl + il + 6 * GMT_VARINT_MAX);
		if (!p)
			break;
		p = gmt_put_varint(p, GMT_TAG_SYMBOL);
		p = gmt_put_varint(p, ip);
		p = gmt_put_varint(p, m ? m->id : 0);
		p = put_str(p, s.function ? s.function : "", fl);
		p = put_str(p, s.file ? s.file : "", il);
		p = gmt_put_varint(p, s.line);
		commit(w, p);
		added++;
	}
	w->nodes_symbolized = w->stacks.n;
	return added;
}

void gmt_writer_trailer(struct gmt_writer *w, unsigned reason, uint64_t end_ns)
{
	gmt_writer_end_batch(w);
	uint8_t *p = room(w, 6 * GMT_VARINT_MAX);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_TRAILER);
	p = gmt_put_varint(p, end_ns);
	p = gmt_put_varint(p, w->events);
	p = gmt_put_varint(p, w->lost);
	p = gmt_put_varint(p, w->stacks.n);
	p = gmt_put_varint(p, reason);
	commit(w, p);
}
