/* The scanning thread (gmt-scan): module scans and, with
 * GPUMEMTRACE_SYMBOLIZE=1, naming frames in the process (preload/scanner.h).
 *
 * Both may wait: dl_iterate_phdr waits for the loader's lock, which a
 * thread inside a dl_iterate_phdr callback (an unwinder, a profiler) or a
 * signal handler that interrupted one may hold for good, and libdw takes
 * seconds on a large library and may load more. So they run here, where
 * nobody waits for them: the flush thread hands work over and takes what
 * is done through two single-producer, single-consumer rings, and the exit
 * writes what is done and leaves (docs/design.md, "The end of a process").
 */
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
/* Out of memory, an entry is left out of its table (and freed): the
 * tracer goes on. uthash's default exit(-1) killed the program. */
#define HASH_NONFATAL_OOM	 1
#define uthash_nonfatal_oom(obj) free(obj)
#include <uthash.h>

#include "common/codec.h"
#include "common/symbolize.h"
#include "gpumemtrace/format.h"
#include "preload/clock.h"
#include "preload/modules.h"
#include "preload/scanner.h"
#include "preload/sync.h"
#include "preload/tracer.h"
#include "preload/writer.h"

enum {
	SCAN_STACK = 256 << 10, /* dl_iterate_phdr and /proc/self/maps lines: some 12 KB */
	NAME_STACK = 4 << 20,	/* libdw recurses through DWARF scopes */
	IN_SLOTS = 1 << 16,	/* frames waiting to be named */
	OUT_BYTES = 256 << 10,	/* SYMBOL records waiting to be written */
	TEXT_MAX = 1024,	/* a name or file is cut here */
	RECORD_MAX = 2 * (TEXT_MAX + GMT_VARINT_MAX) + 4 * GMT_VARINT_MAX,
};

struct seen_ip {
	uint64_t ip;
	UT_hash_handle hh;
};

static struct {
	int started; /* in this process image */
	pid_t pid;
	pthread_t thread;
	pid_t tid; /* the thread's */
	int symbolize;
	uint32_t up;   /* futex word: the thread runs our code (fork waits) */
	uint32_t wake; /* futex word: bumped by pokes, asks and takes */
	/* Scans asked for by gmt_scanner_scan_now, and the count read as the
	 * last scan began (a futex word): a scan that began after a request
	 * has seen every module loaded before it. */
	uint32_t scan_asks, scan_done;
	/* Frames to name: the flush thread stores at in_head, we read at in_tail. */
	uint64_t *in;
	uint64_t in_head, in_tail;
	/* SYMBOL records, each a 4-byte length and the record: we store at
	 * out_head, the flush thread reads at out_tail. */
	uint8_t *out;
	uint64_t out_head, out_tail;
	/* The naming's own state: this thread's alone. */
	struct gmt_symbolizer *sym;
	uint32_t sym_modules; /* modules registered with sym */
	struct seen_ip *seen;
	int unsafe; /* no room under the limits: nothing is named */
	int naming; /* inside libdw, for one frame */
} scn;

static void wake_word(uint32_t *w)
{
	__atomic_add_fetch(w, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void gmt_scanner_poke(void)
{
	if (__atomic_load_n(&scn.started, __ATOMIC_RELAXED))
		wake_word(&scn.wake);
}

/* libdw does not survive every failed allocation (seen: SIGSEGV in
 * dwarf_getsrclines under a tight RLIMIT_AS), and a crash on any thread
 * ends the program. Name only with room under the limits: the module
 * files' size (libdw maps them) and 256 MiB. Otherwise a NOTE says so and
 * the CLI names the frames. */
static int naming_safe(void)
{
	enum { ROOM_MIB = 256 };
	struct rlimit as, data;
	if (getrlimit(RLIMIT_AS, &as) != 0 || getrlimit(RLIMIT_DATA, &data) != 0)
		return 0;
	if (as.rlim_cur == RLIM_INFINITY && data.rlim_cur == RLIM_INFINITY)
		return 1;
	unsigned long long size = 0, data_pages = 0, x;
	char text[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
	if (fd >= 0)
		close(fd);
	text[n > 0 ? n : 0] = 0;
	if (sscanf(text, "%llu %llu %llu %llu %llu %llu", &size, &x, &x, &x, &x, &data_pages) != 6)
		size = ~0ull >> 16; /* unknown: as if there were no room */
	unsigned long long page = (unsigned long long)sysconf(_SC_PAGESIZE);
	unsigned long long need = (unsigned long long)ROOM_MIB << 20;
	for (uint32_t i = 0; i < gmt_modules_count(); i++) {
		struct stat st;
		if (stat(gmt_modules_at(i)->path, &st) == 0)
			need += (unsigned long long)st.st_size;
	}
	return (as.rlim_cur == RLIM_INFINITY || size * page + need <= as.rlim_cur) &&
	       (data.rlim_cur == RLIM_INFINITY || data_pages * page + need <= data.rlim_cur);
}

/* Copies n bytes into (or out of) the out ring at byte count pos. */
static void ring_put(uint64_t pos, const void *src, size_t n)
{
	size_t at = (size_t)(pos % OUT_BYTES), first = n < OUT_BYTES - at ? n : OUT_BYTES - at;
	memcpy(scn.out + at, src, first);
	memcpy(scn.out, (const uint8_t *)src + first, n - first);
}

static void ring_get(uint64_t pos, void *dst, size_t n)
{
	size_t at = (size_t)(pos % OUT_BYTES), first = n < OUT_BYTES - at ? n : OUT_BYTES - at;
	memcpy(dst, scn.out + at, first);
	memcpy((uint8_t *)dst + first, scn.out, n - first);
}

static uint8_t *put_text(uint8_t *p, const char *s)
{
	size_t n = s ? strnlen(s, TEXT_MAX) : 0;
	return gmt_writer_put_str(p, s ? s : "", n);
}

static void scan(void)
{
	uint32_t asks = __atomic_load_n(&scn.scan_asks, __ATOMIC_ACQUIRE);
	gmt_modules_scan();
	gmt_futex_set(&scn.scan_done, asks);
}

/* Names one frame into the out ring, waiting while it is full (for the
 * flush thread, which takes records every cycle). */
static void name_one(uint64_t ip)
{
	struct gmt_symbol s;
	/* A return address points after the call: name the call itself. */
	__atomic_store_n(&scn.naming, 1, __ATOMIC_RELAXED);
	gmt_symbolize(scn.sym, ip - 1, &s);
	__atomic_store_n(&scn.naming, 0, __ATOMIC_RELAXED);
	const struct gmt_module *m = gmt_modules_find(ip);
	uint8_t rec[RECORD_MAX], *p = rec;
	p = gmt_put_varint(p, GMT_TAG_SYMBOL);
	p = gmt_put_varint(p, ip);
	p = gmt_put_varint(p, m ? m->id : 0);
	p = put_text(p, s.function);
	p = put_text(p, s.file);
	p = gmt_put_varint(p, s.line);
	uint32_t len = (uint32_t)(p - rec);
	uint64_t head = scn.out_head;
	for (;;) {
		uint32_t seen = __atomic_load_n(&scn.wake, __ATOMIC_ACQUIRE);
		/* Pairs with the release store of out_tail in take_names. */
		uint64_t tail = __atomic_load_n(&scn.out_tail, __ATOMIC_ACQUIRE);
		if (head + 4 + len - tail <= OUT_BYTES)
			break;
		if (__atomic_load_n(&scn.scan_asks, __ATOMIC_ACQUIRE) != scn.scan_done)
			scan(); /* an exit waits for it, not for room */
		struct timespec ts = {0, 100000000};
		syscall(SYS_futex, &scn.wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
	}
	ring_put(head, &len, 4);
	ring_put(head + 4, rec, len);
	/* Pairs with the acquire load in gmt_scanner_take_names. */
	__atomic_store_n(&scn.out_head, head + 4 + len, __ATOMIC_RELEASE);
}

static void name_pending(void)
{
	/* Pairs with the release store of in_head in gmt_scanner_ask_names. */
	uint64_t head = __atomic_load_n(&scn.in_head, __ATOMIC_ACQUIRE);
	if (scn.in_tail == head)
		return;
	if (!scn.sym && !scn.unsafe) {
		scn.unsafe = !naming_safe() || !(scn.sym = gmt_symbolizer_new());
		if (scn.unsafe)
			gmt_note(1, "frames not named in the process: the address-space or data "
				    "limit leaves too little room for the symbolizer; reports name "
				    "them from the module files");
	}
	for (; !scn.unsafe && scn.sym_modules < gmt_modules_count(); scn.sym_modules++) {
		const struct gmt_module *m = gmt_modules_at(scn.sym_modules);
		gmt_symbolizer_add_module(scn.sym, m->path, m->load_bias, m->start, m->end, NULL,
					  0);
	}
	for (uint64_t t = scn.in_tail; t < head; t++) {
		uint64_t ip = scn.in[t % IN_SLOTS];
		struct seen_ip *e;
		if (__atomic_load_n(&scn.scan_asks, __ATOMIC_ACQUIRE) != scn.scan_done)
			scan(); /* an exit waits for it: before the next name */
		HASH_FIND(hh, scn.seen, &ip, sizeof ip, e);
		if (!scn.unsafe && !e && (e = calloc(1, sizeof *e))) {
			e->ip = ip;
			HASH_ADD(hh, scn.seen, ip, sizeof e->ip, e);
			name_one(ip);
		}
		/* Pairs with the acquire load in gmt_scanner_ask_names. */
		__atomic_store_n(&scn.in_tail, t + 1, __ATOMIC_RELEASE);
	}
}

static void *scanner_main(void *arg)
{
	gmt_enter(); /* nothing this thread does is the program's */
	scn.tid = (pid_t)syscall(SYS_gettid);
	gmt_futex_set(&scn.up, 1);
	prctl(PR_SET_NAME, "gmt-scan", 0, 0, 0);
	for (;;) {
		uint32_t seen = __atomic_load_n(&scn.wake, __ATOMIC_ACQUIRE);
		scan();
		if (scn.symbolize)
			name_pending();
		/* Until poked; a poke after the load of seen returns at once. */
		syscall(SYS_futex, &scn.wake, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
	}
	return NULL;
}

void gmt_scanner_start(int symbolize)
{
	if (scn.started && scn.pid == getpid())
		return;
	scn.pid = getpid();
	scn.symbolize = symbolize;
	if (symbolize && !scn.in) {
		void *in = mmap(NULL, IN_SLOTS * sizeof *scn.in, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		void *out = mmap(NULL, OUT_BYTES, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (in == MAP_FAILED || out == MAP_FAILED) {
			scn.symbolize = 0;
		} else {
			scn.in = in;
			scn.out = out;
		}
	}
	scn.up = 0;
	if (gmt_thread_start(&scn.thread, scn.symbolize ? NAME_STACK : SCAN_STACK, scanner_main,
			     NULL) != 0) {
		gmt_note(1, "cannot start the scanning thread: modules loaded from now on are "
			    "not recorded, and frames in them not named");
		scn.symbolize = 0;
		return;
	}
	__atomic_store_n(&scn.started, 1, __ATOMIC_RELEASE);
}

uint32_t gmt_scanner_scan_ask(void)
{
	if (!__atomic_load_n(&scn.started, __ATOMIC_ACQUIRE))
		return 0;
	uint32_t ask = __atomic_add_fetch(&scn.scan_asks, 1, __ATOMIC_RELEASE);
	wake_word(&scn.wake);
	return ask;
}

int gmt_scanner_scan_wait(uint32_t ask, unsigned loader_ms, unsigned max_ms)
{
	if (!ask || !__atomic_load_n(&scn.started, __ATOMIC_ACQUIRE))
		return 0;
	uint64_t start = gmt_now_ns();
	uint32_t done;
	/* Counts wrap: compare the difference. Past asleep_ms, a thread that
	 * waits for the loader's lock or names a frame (libdw: seconds on a
	 * large library) is not waited for; one slow or waiting for a CPU is. */
	while ((int32_t)((done = __atomic_load_n(&scn.scan_done, __ATOMIC_ACQUIRE)) - ask) < 0) {
		uint64_t waited_ms = (gmt_now_ns() - start) / 1000000;
		if (waited_ms >= max_ms ||
		    (waited_ms >= loader_ms && (__atomic_load_n(&scn.naming, __ATOMIC_RELAXED) ||
						gmt_thread_waits_for_loader(scn.tid))))
			return -1;
		gmt_futex_wait_while(&scn.scan_done, done, 2);
	}
	return 0;
}

void gmt_scanner_ask_names(const struct gmt_stacks *s, uint32_t *asked)
{
	if (!__atomic_load_n(&scn.started, __ATOMIC_ACQUIRE) || !scn.symbolize) {
		*asked = s->n;
		return;
	}
	uint64_t head = scn.in_head;
	uint64_t tail = __atomic_load_n(&scn.in_tail, __ATOMIC_ACQUIRE);
	uint32_t id = *asked + 1;
	for (; id <= s->n && head - tail < IN_SLOTS; id++)
		if (!GMT_IS_PYFRAME_IP(s->ip[id])) /* named by its PYFRAME record */
			scn.in[head++ % IN_SLOTS] = s->ip[id];
	*asked = id - 1;
	if (head != scn.in_head) {
		__atomic_store_n(&scn.in_head, head, __ATOMIC_RELEASE);
		wake_word(&scn.wake);
	}
}

void gmt_scanner_take_names(struct gmt_writer *w)
{
	if (!scn.out)
		return;
	uint64_t tail = scn.out_tail;
	uint64_t head = __atomic_load_n(&scn.out_head, __ATOMIC_ACQUIRE);
	while (tail < head) {
		uint32_t len;
		ring_get(tail, &len, 4);
		uint8_t *p = gmt_writer_room(w, len);
		if (!p)
			break;
		ring_get(tail + 4, p, len);
		gmt_writer_commit(w, p + len);
		tail += 4 + len;
	}
	if (tail != scn.out_tail) {
		__atomic_store_n(&scn.out_tail, tail, __ATOMIC_RELEASE);
		wake_word(&scn.wake); /* it may wait for room */
	}
}

uint64_t gmt_scanner_names_pending(void)
{
	if (!scn.in)
		return 0;
	return __atomic_load_n(&scn.in_head, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&scn.in_tail, __ATOMIC_ACQUIRE);
}

void gmt_scanner_fork_prepare(void)
{
	if (__atomic_load_n(&scn.started, __ATOMIC_ACQUIRE) && scn.pid == getpid())
		gmt_futex_wait_while(&scn.up, 0, GMT_THREAD_UP_WAIT_MS);
}

void gmt_scanner_fork_child(void)
{
	/* The parent's thread is not ours; what it held (the symbolizer's
	 * state, the set of names) may be half changed: left, not freed. */
	scn.started = 0;
	scn.sym = NULL;
	scn.sym_modules = 0;
	scn.seen = NULL;
	scn.unsafe = 0;
	scn.in_head = scn.in_tail = scn.out_head = scn.out_tail = 0;
	scn.scan_asks = scn.scan_done = 0;
	gmt_modules_fork_child();
}
