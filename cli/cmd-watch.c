/* gpumemtrace watch: a trace as it grows, in a terminal view or as plain
 * snapshots. Reading and figures: analysis/live.h; the frame's lines:
 * cli/watch-render.c; here the sources (a trace, a process, a command),
 * the loop, the terminal and the keys. Plain ANSI sequences, no curses
 * (docs/design.md, "gpumemtrace watch"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/launch.h"
#include "cli/options.h"
#include "cli/watch.h"
#include "analysis/report-base.h"

#define CMD	       "watch"
#define STALE_CHECK_MS 2000  /* no growth this long: is the writer still there? */
#define STALE_SAY_MS   60000 /* ... and, where that cannot be told, say so after this */
#define FULL_PCT       90

static const char about[] =
    "Shows a trace as it grows: per device, the traced live bytes, the\n"
    "framework's reserved bytes (run --framework-counters) and NVML's figure,\n"
    "a history of the last minutes, the top sites, libraries or threads with\n"
    "their live bytes and change since watch began and since the last step,\n"
    "and warnings: a leak suspect, a device nearly full, events lost. It\n"
    "reads only what the trace gained since the last refresh.\n"
    "\n"
    "TRACE is a trace file; PID a process whose trace it finds (among the\n"
    "files it has open); -- COMMAND runs COMMAND traced and watches it.\n"
    "On a terminal it is a full-screen view; otherwise (or with --json) it\n"
    "prints one snapshot of the same figures every --interval seconds, for\n"
    "logs, and ends when the trace does.\n";
static const char more[] =
    "keys (the terminal view): q quit (the traced program runs on), p pause,\n"
    "g next grouping (s sites, l libraries, t threads), o next order (live,\n"
    "since start, since step), d next device (or all), r restart 'since\n"
    "start' from now.\n"
    "\n"
    "A step is a MARK, a START range, or a range pushed at depth 0 on its\n"
    "thread (NVTX or gpumemtrace.range) whose text matches --step\n"
    "(case-insensitive). A leak suspect: over the last 16 steps' starts, the\n"
    "live bytes never fell and rose in both the first half and the second\n"
    "(a cache warming up is not one), named with the site that rose most.\n"
    "A device is nearly full at 90% (NVML's used memory of every process,\n"
    "else the traced bytes against the device's total). An NVML figure above\n"
    "the device's total is not used, as in every report.\n"
    "\n"
    "With -- COMMAND on a terminal, COMMAND's output goes to --log (default\n"
    "gpumemtrace-watch.PID.log), its input is /dev/null, it runs in a session\n"
    "of its own, and quitting (or the terminal's hangup) leaves it running;\n"
    "otherwise its output passes through and ^C reaches it. Once it has ended,\n"
    "watch names the trace's frames into it, as run does.\n"
    "\n"
    "exit status: 0 when the trace ended or you quit; with -- COMMAND,\n"
    "COMMAND's status once it ended; 2 on a usage error; 3 when the input\n"
    "cannot be read (no such file, a PID with no trace, a read error); 4 for\n"
    "a file that is not a trace or is corrupt. A trace that stops without a\n"
    "trailer (its process killed) or ends in a torn tail is shown up to\n"
    "there with one line saying so, exit 0.\n"
    "\n"
    "examples:\n"
    "  gpumemtrace watch -- python train.py\n"
    "  gpumemtrace watch 4242                     # a running process\n"
    "  gpumemtrace watch --interval 60 gpumemtrace.4242.gmt >> memory.log\n"
    "  gpumemtrace watch --json --once gpumemtrace.4242.gmt\n";
static const struct opt_usage usage = {.name = "watch",
				       .args = "TRACE | PID | -- COMMAND [ARGS...]",
				       .min_args = 0,
				       .about = about,
				       .more = more};

struct watch_args {
	const char *interval, *output, *log, *step, *history_entries;
	int by, sort;
	int64_t device;
	bool has_device, json, once, framework_counters, framework_history, per_tensor;
	uint64_t top;
	const char **pos;
	int npos;
	char **command; /* after "--" */
	int ncommand;
	unsigned interval_ms;
};

/* "0.5", "10", "2.25" seconds -> ms (50 ms .. 1 h). */
static int parse_interval(const char *s, unsigned *ms)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0.05 && v <= 3600))
		return say_usage_error(CMD, "--interval: seconds from 0.05 to 3600, not '%s'", s);
	*ms = (unsigned)(v * 1000 + 0.5);
	return -1;
}

static int parse_args(int argc, char **argv, struct watch_args *a, bool tui)
{
	int k = 1;
	while (k < argc && strcmp(argv[k], "--") != 0)
		k++;
	const struct option opts[] = {
	    OPT_STRING("interval", &a->interval, "SECONDS",
		       "refresh every SECONDS (default 1 on a terminal,\n"
		       "else 10: one snapshot each time)",
		       .short_name = 'n'),
	    OPT_CHOICE("by", &a->by, "site|library|thread", "grouping",
		       "group the list by site (default), library or thread"),
	    OPT_CHOICE("sort", &a->sort, "live|start|step", "order",
		       "order the list by live bytes (default), change since\n"
		       "watch began, or since the last step"),
	    OPT_INT("device", &a->device, "N", 0, INT32_MAX, "only device N",
		    .given = &a->has_device),
	    OPT_UINT("top", &a->top, "N", "rows per device in a snapshot (default 10)"),
	    OPT_STRING("step", &a->step, "REGEX",
		       "what names a step (default 'step|iter|batch',\n"
		       "case-insensitive)"),
	    OPT_BOOL("json", &a->json,
		     "one JSON object per snapshot, one per line\n(keys: docs/cli.md)"),
	    OPT_BOOL("once", &a->once, "print one snapshot of what is there now, and end"),
	    OPT_FILE("output", &a->output, "TEMPLATE",
		     "-- COMMAND: the trace path template, as run -o", .short_name = 'o'),
	    OPT_FILE("log", &a->log, "FILE",
		     "-- COMMAND on a terminal: where its output goes\n"
		     "(default gpumemtrace-watch.PID.log)"),
	    OPT_BOOL("framework-counters", &a->framework_counters,
		     "-- COMMAND: also record the framework's counters,\nas run does"),
	    OPT_BOOL("framework-history", &a->framework_history,
		     "-- COMMAND: also record PyTorch's allocator history,\nas run does "
		     "(implies --framework-counters)"),
	    OPT_STRING("history-entries", &a->history_entries, "N",
		       "-- COMMAND: the history's bound, as run's\n(implies --framework-history)"),
	    OPT_BOOL("per-tensor", &a->per_tensor,
		     "-- COMMAND: turn the frameworks' caching allocators\noff, as run does"),
	    OPT_END(),
	};
	const char **args;
	int n;
	int rc = opt_parse(&usage, opts, k, argv, &args, &n);
	if (rc >= 0)
		return rc;
	a->pos = args;
	a->npos = n;
	if (k < argc) {
		a->command = argv + k + 1;
		a->ncommand = argc - k - 1;
	}
	if (a->command && (n || !a->ncommand))
		return say_usage_error(CMD, a->ncommand ? "give TRACE, PID or -- COMMAND, not both"
							: "missing COMMAND after --");
	if (!a->command && n != 1)
		return say_usage_error(CMD, n ? "one TRACE or PID at a time"
					      : "missing TRACE, PID or -- COMMAND");
	if (a->once && a->command)
		return say_usage_error(CMD, "--once reads a trace or a process, not -- COMMAND");
	if (!a->command &&
	    (a->framework_counters || a->framework_history || a->history_entries || a->per_tensor))
		return say_usage_error(CMD,
				       "--framework-counters, --framework-history, "
				       "--history-entries and --per-tensor go with -- COMMAND");
	rc = launch_history_args(CMD, a->history_entries, &a->framework_history,
				 &a->framework_counters);
	if (rc >= 0)
		return rc;
	a->interval_ms = tui ? 1000 : 10000;
	if (a->interval && parse_interval(a->interval, &a->interval_ms) >= 0)
		return EXIT_USAGE;
	if (!a->top)
		a->top = 10;
	return -1;
}

/* ---- where the trace is --------------------------------------------------- */

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool is_trace_fd(const char *fdpath)
{
	int fd = open(fdpath, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	char magic[GMT_MAGIC_LEN];
	bool ok = pread(fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
		  memcmp(magic, GMT_MAGIC, GMT_MAGIC_LEN) == 0;
	close(fd);
	return ok;
}

/* The trace process pid has open (the newest, if several), or NULL after
 * the one line. */
static char *trace_of_pid(long pid, int *rc)
{
	*rc = EXIT_INPUT;
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
		say_error(CMD, "no process %ld", pid);
		return NULL;
	}
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%ld/fd", pid);
	DIR *d = opendir(dir);
	if (!d) {
		say_error(CMD,
			  "cannot see process %ld's open files (%s): watch a process of your "
			  "own, or give its trace's path",
			  pid, strerror(errno));
		return NULL;
	}
	char *best = NULL;
	struct timespec best_m = {0};
	struct dirent *e;
	while ((e = readdir(d))) {
		char fdpath[PATH_MAX], target[PATH_MAX];
		struct stat st;
		snprintf(fdpath, sizeof(fdpath), "%s/%s", dir, e->d_name);
		if (e->d_name[0] == '.' || stat(fdpath, &st) != 0 || !S_ISREG(st.st_mode) ||
		    !is_trace_fd(fdpath))
			continue;
		if (best &&
		    (st.st_mtim.tv_sec < best_m.tv_sec ||
		     (st.st_mtim.tv_sec == best_m.tv_sec && st.st_mtim.tv_nsec <= best_m.tv_nsec)))
			continue;
		free(best);
		/* its name, when the name still leads to it; else the descriptor */
		ssize_t n = readlink(fdpath, target, sizeof(target) - 1);
		struct stat nst;
		if (n > 0 && (target[n] = '\0', stat(target, &nst) == 0) &&
		    nst.st_dev == st.st_dev && nst.st_ino == st.st_ino)
			best = xstrdup(target);
		else
			best = xstrdup(fdpath);
		best_m = st.st_mtim;
	}
	closedir(d);
	if (!best)
		say_error(CMD,
			  "process %ld has no trace open: it is not traced (LD_PRELOAD="
			  "libgpumemtrace.so, or gpumemtrace run), or has made no CUDA call yet",
			  pid);
	return best;
}

/* Whether process pid still has the file (dev, ino) open. A process we
 * cannot look into counts as still there. */
static bool writer_alive(long pid, dev_t dev, ino_t ino)
{
	if (pid <= 0)
		return true;
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		return false;
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%ld/fd", pid);
	DIR *d = opendir(dir);
	if (!d)
		return true;
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		char fdpath[PATH_MAX];
		struct stat st;
		snprintf(fdpath, sizeof(fdpath), "%s/%s", dir, e->d_name);
		found = e->d_name[0] != '.' && stat(fdpath, &st) == 0 && st.st_dev == dev &&
			st.st_ino == ino;
	}
	closedir(d);
	return found;
}

/* ---- the state of a watch ---------------------------------------------------- */

enum wstate { W_WAITING, W_RUNNING, W_FINISHED, W_GONE, W_DAMAGED };

struct watch {
	struct watch_args *a;
	struct live lv;
	bool open;
	char *path;
	char title[512];
	struct live_opts lo;
	/* -- COMMAND */
	pid_t child;
	int child_status; /* as a shell reports it, once done */
	bool child_done;
	struct launch_list list;
	bool have_list;
	char *log;
	int more_traces;
	/* the writer */
	long writer;	   /* its pid, where it can be checked; 0: cannot */
	bool writer_other; /* the trace's host is not this one */
	dev_t dev;
	ino_t ino;
	uint64_t grown_ms, checked_ms;
	enum wstate state;
	int rc; /* the exit code once the watch ends on its own */
	char note[640];
	bool paused, started;
	/* the view */
	enum live_group by;
	enum live_sort sort;
	bool one_device;
	int64_t device;
	bool utf8;
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int open_trace(struct watch *w, const char *path)
{
	int rc = live_open(&w->lv, CMD, path, &w->lo);
	if (rc >= 0)
		return rc;
	w->open = true;
	w->path = xstrdup(path);
	struct stat st;
	if (stat(path, &st) == 0) {
		w->dev = st.st_dev;
		w->ino = st.st_ino;
	}
	w->grown_ms = w->checked_ms = now_ms();
	w->state = W_RUNNING;
	return -1;
}

/* After the first read: the process that writes it, where this host can
 * tell (the PROCESS record's pid and host). */
static void find_writer(struct watch *w)
{
	const struct trace *t = &w->lv.t;
	if (w->writer || w->child || !t->has_process)
		return;
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	if (t->host && strcmp(t->host, host) != 0) {
		w->writer_other = true;
		return;
	}
	w->writer = (long)t->pid;
}

static void set_title(struct watch *w)
{
	const struct trace *t = &w->lv.t;
	if (w->child || !w->open || !t->has_process || !t->command)
		return;
	/* the program's name without its directories, then its arguments */
	const char *args = strchr(t->command, ' ');
	size_t len = args ? (size_t)(args - t->command) : strlen(t->command);
	const char *name = t->command;
	for (const char *p = t->command; p < t->command + len; p++)
		if (*p == '/')
			name = p + 1;
	snprintf(w->title, sizeof(w->title), "%.*s%.200s (pid %" PRIu64 ")",
		 (int)(t->command + len - name), name, args ? args : "", t->pid);
}

/* -- COMMAND: the first trace it wrote, once there is one. */
static void look_for_trace(struct watch *w)
{
	int n = 0;
	bool missing = false;
	char **found = launch_list_read(CMD, &w->list, &n, &missing);
	if (n && !w->open && open_trace(w, found[0]) >= 0)
		w->rc = EXIT_INPUT;
	w->more_traces = n > 1 ? n - 1 : 0;
	for (int i = 0; i < n; i++)
		free(found[i]);
	free(found);
}

static void reap_child(struct watch *w)
{
	int status;
	if (!w->child || w->child_done || waitpid(w->child, &status, WNOHANG) != w->child)
		return;
	w->child_done = true;
	w->child_status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

/* One refresh's reading: what the trace gained, and what became of it. */
static bool refresh(struct watch *w)
{
	reap_child(w);
	if (w->child && !w->open)
		look_for_trace(w);
	if (!w->open) {
		if (w->child_done)
			w->state = W_FINISHED;
		return false;
	}
	if (w->state == W_DAMAGED || w->paused)
		return false;
	uint64_t now = now_ms();
	bool got = live_poll(&w->lv);
	if (got && !w->started) {
		/* catch up with what is there (a poll that finds nothing new applies
		 * all it holds), then "since start" counts from here; from the
		 * trace's own start when it had ended already (a finished trace:
		 * watching began after all there is) */
		for (int i = 0; i < 1000 && live_poll(&w->lv); i++)
			;
		if (!w->child && !w->lv.t.has_trailer)
			live_set_start(&w->lv);
		w->started = true;
	}
	if (got && w->state != W_RUNNING && w->state != W_FINISHED)
		w->state = W_RUNNING; /* it grew again */
	if (got) {
		w->grown_ms = now;
		set_title(w);
		find_writer(w);
	}
	if (w->child)
		look_for_trace(w); /* more traces: counted */
	const struct trace *t = &w->lv.t;
	const struct gmt_read_info *in = &t->info;
	w->note[0] = '\0';
	if (in->stop == GMT_STOP_CORRUPT || in->stop == GMT_STOP_IO) {
		w->state = W_DAMAGED;
		w->rc = in->stop == GMT_STOP_IO ? EXIT_INPUT : EXIT_TRACE;
		if (in->stop == GMT_STOP_CORRUPT) /* as every command says it */
			snprintf(w->note, sizeof(w->note),
				 "corrupt trace: bad chunk at offset %" PRIu64
				 " (%s): figures up to there",
				 in->stop_offset, in->stop_msg);
		else
			snprintf(w->note, sizeof(w->note),
				 "cannot read it: %s (chunk at offset %" PRIu64
				 "): figures up to there",
				 in->stop_msg, in->stop_offset);
		return false;
	}
	if (got)
		return true;
	if (t->has_trailer) {
		w->state = W_FINISHED;
		if (in->stop == GMT_STOP_TORN)
			snprintf(w->note, sizeof(w->note),
				 "the trace ends in a torn chunk at byte %" PRIu64
				 " (%s): figures up to there",
				 in->stop_offset, in->stop_msg);
		return false;
	}
	uint64_t idle = now - w->grown_ms;
	bool gone = w->child ? w->child_done : false;
	if (!w->child && w->writer &&
	    ((idle >= STALE_CHECK_MS && now - w->checked_ms >= 1000) || w->a->once)) {
		w->checked_ms = now;
		gone = !writer_alive(w->writer, w->dev, w->ino);
	} else if (!w->child && w->state == W_GONE) {
		gone = true;
	}
	if (gone) {
		w->state = W_GONE;
		snprintf(w->note, sizeof(w->note),
			 "the process that wrote it (pid %" PRIu64 ") is gone and the trace has no "
			 "trailer%s: killed or crashed; figures up to its last write",
			 t->pid, in->stop == GMT_STOP_TORN ? " (a torn tail)" : "");
	} else if (idle >= STALE_SAY_MS && (w->writer_other || !w->writer)) {
		char age[32];
		snprintf(age, sizeof(age), "%" PRIu64 "m%02" PRIu64 "s", idle / 60000,
			 idle / 1000 % 60);
		snprintf(w->note, sizeof(w->note),
			 "the trace has not grown for %s and has no trailer (%s)", age,
			 w->writer_other
			     ? "its process runs on another host: cannot tell whether it "
			       "still runs"
			     : "cannot tell whether its process still runs");
	}
	return false;
}

/* ---- a frame --------------------------------------------------------------- */

static void state_text(const struct watch *w, char *buf, size_t size)
{
	const struct trace *t = &w->lv.t;
	if (w->paused) {
		snprintf(buf, size, "paused");
	} else if (w->state == W_WAITING || (!w->open && !w->child_done)) {
		snprintf(buf, size, "waiting for its first CUDA call");
	} else if (w->child_done && w->child_status >= 128) {
		snprintf(buf, size, "ended: signal %d", w->child_status - 128);
	} else if (w->child_done) {
		snprintf(buf, size, "ended: exit status %d", w->child_status);
	} else if (w->state == W_FINISHED && t->has_exit) {
		if (t->exit_signal)
			snprintf(buf, size, "ended: signal %" PRIu64, t->exit_signal);
		else
			snprintf(buf, size, "ended: exit status %" PRId64, t->exit_status);
	} else if (w->state == W_FINISHED) {
		snprintf(buf, size, "ended");
	} else if (w->state == W_GONE) {
		snprintf(buf, size, "stopped: no trailer");
	} else if (w->state == W_DAMAGED) {
		snprintf(buf, size, "damaged");
	} else {
		snprintf(buf, size, "running");
	}
}

static void frame_of(struct watch *w, struct watch_frame *f, char *state, size_t size,
		     const char **notes, char *extra)
{
	state_text(w, state, size);
	size_t nn = 0;
	if (w->note[0])
		notes[nn++] = w->note;
	if (w->more_traces) {
		snprintf(extra, 160,
			 "%d more trace%s of this command: gpumemtrace watch PATH shows one",
			 w->more_traces, w->more_traces == 1 ? "" : "s");
		notes[nn++] = extra;
	}
	*f = (struct watch_frame){.title = w->title,
				  .path = w->path,
				  .state = state,
				  .notes = notes,
				  .nnotes = nn,
				  .by = w->by,
				  .sort = w->sort,
				  .one_device = w->one_device,
				  .device = w->device,
				  .utf8 = w->utf8,
				  .top = (size_t)w->a->top,
				  .full_pct = FULL_PCT,
				  .step_re = w->lo.step_regex ? w->lo.step_regex : LIVE_STEP_REGEX,
				  .incomplete =
				      w->a->once || w->state == W_GONE || w->state == W_DAMAGED};
}

static bool print_snapshot(struct watch *w)
{
	struct watch_frame f;
	char state[96], extra[160];
	const char *notes[2];
	frame_of(w, &f, state, sizeof(state), notes, extra);
	if (w->a->json) {
		watch_json(w->open ? &w->lv : NULL, &f, stdout);
	} else {
		struct watch_lines l = {0};
		watch_render(w->open ? &w->lv : NULL, &f, &l);
		for (size_t i = 0; i < l.n; i++)
			printf("%s\n", l.v[i].text);
		putchar('\n');
		watch_lines_free(&l);
	}
	return fflush(stdout) == 0 && !ferror(stdout);
}

/* ---- the terminal ---------------------------------------------------------- */

static volatile sig_atomic_t got_quit, got_winch;
static void on_quit(int sig)
{
	got_quit = sig;
}
static void on_winch(int sig)
{
	got_winch = 1;
}
static void on_child(int sig)
{
}

struct tty {
	int fd; /* the keys */
	struct termios saved;
	bool raw;
	int width, height;
	bool colour;
};

static void tty_size(struct tty *tt)
{
	struct winsize ws;
	tt->width = 80;
	tt->height = 24;
	if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
		tt->width = ws.ws_col;
		tt->height = ws.ws_row;
	}
}

static void put(const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t k = write(1, s, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

static void tty_enter(struct tty *tt)
{
	tt->fd = isatty(0) ? 0 : open("/dev/tty", O_RDONLY | O_CLOEXEC);
	if (tt->fd >= 0 && tcgetattr(tt->fd, &tt->saved) == 0) {
		struct termios r = tt->saved;
		r.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
		r.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
		r.c_cc[VMIN] = 0;
		r.c_cc[VTIME] = 0;
		tt->raw = tcsetattr(tt->fd, TCSAFLUSH, &r) == 0;
	}
	const char *no = getenv("NO_COLOR");
	tt->colour = !(no && *no);
	tty_size(tt);
	put("\033[?1049h\033[?25l\033[H\033[2J"); /* the alternate screen, no cursor */
}

static void tty_leave(struct tty *tt)
{
	put("\033[0m\033[?25h\033[?1049l");
	if (tt->raw)
		tcsetattr(tt->fd, TCSAFLUSH, &tt->saved);
	if (tt->fd > 0)
		close(tt->fd);
}

static const char *style_on(const struct tty *tt, int style)
{
	switch (style) {
	case WS_TITLE:
	case WS_HEAD:
		return "\033[1m";
	case WS_WARN:
		return tt->colour ? "\033[1;33m" : "\033[1m";
	case WS_FOOT:
		return "\033[7m";
	default:
		return "";
	}
}

static void draw(struct watch *w, struct tty *tt)
{
	struct watch_frame f;
	char state[96], extra[160];
	const char *notes[2];
	frame_of(w, &f, state, sizeof(state), notes, extra);
	f.tui = true;
	f.width = tt->width;
	f.height = tt->height;
	struct watch_lines l = {0};
	watch_render(w->open ? &w->lv : NULL, &f, &l);
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	fputs("\033[H", out);
	size_t rows = tt->height > 1 ? (size_t)tt->height - 1 : 1;
	for (size_t i = 0; i < l.n && i < rows; i++) {
		watch_cut(l.v[i].text, (size_t)tt->width);
		fprintf(out, "%s%s\033[0m\033[K\r\n", style_on(tt, l.v[i].style), l.v[i].text);
	}
	fputs("\033[J", out);
	char foot[256];
	snprintf(foot, sizeof(foot), "q quit  p %s  g group: %s  o order: %s  d device: ",
		 w->paused ? "resume" : "pause", live_group_name[w->by], live_sort_name[w->sort]);
	size_t fl = strlen(foot);
	if (w->one_device)
		snprintf(foot + fl, sizeof(foot) - fl, "%" PRId64 "  r restart", w->device);
	else
		snprintf(foot + fl, sizeof(foot) - fl, "all  r restart");
	watch_cut(foot, (size_t)tt->width);
	fprintf(out, "\033[%d;1H%s%s\033[K\033[0m", tt->height, style_on(tt, WS_FOOT), foot);
	fclose(out);
	put(buf);
	free(buf);
	watch_lines_free(&l);
}

static void next_device(struct watch *w)
{
	const struct live *lv = &w->lv;
	if (!w->open || !lv->ndevs) {
		w->one_device = false;
		return;
	}
	if (!w->one_device) {
		w->one_device = true;
		w->device = lv->devs[0].ordinal;
		return;
	}
	for (size_t i = 0; i + 1 < lv->ndevs; i++)
		if (lv->devs[i].ordinal == w->device) {
			w->device = lv->devs[i + 1].ordinal;
			return;
		}
	w->one_device = false;
}

/* A key; false to quit. Escape sequences (arrows) are passed over. */
static bool key(struct watch *w, const unsigned char *k, size_t n, size_t *used)
{
	*used = 1;
	if (k[0] == 0x1b) {
		size_t i = 1;
		if (n > 1 && (k[1] == '[' || k[1] == 'O'))
			for (i = 2; i < n && !(k[i] >= 0x40 && k[i] <= 0x7e); i++)
				;
		*used = i < n ? i + 1 : n;
		return true;
	}
	switch (k[0]) {
	case 'q':
	case 'Q':
	case 3: /* ^C: ISIG is off in the view */
	case 4:
		return false;
	case 'p':
	case ' ':
		w->paused = !w->paused;
		break;
	case 'g':
	case '\t':
		w->by = (enum live_group)((w->by + 1) % LIVE_GROUPS);
		break;
	case 's':
		w->by = LIVE_BY_SITE;
		break;
	case 'l':
		w->by = LIVE_BY_LIBRARY;
		break;
	case 't':
		w->by = LIVE_BY_THREAD;
		break;
	case 'o':
		w->sort = (enum live_sort)((w->sort + 1) % LIVE_SORTS);
		break;
	case 'd':
		next_device(w);
		break;
	case 'r':
		if (w->open)
			live_set_start(&w->lv);
		break;
	}
	return true;
}

static void view(struct watch *w)
{
	struct tty tt = {0};
	tty_enter(&tt);
	uint64_t next = 0;
	for (;;) {
		if (got_quit)
			break;
		if (got_winch) {
			got_winch = 0;
			tty_size(&tt);
			put("\033[2J");
		}
		uint64_t now = now_ms();
		if (now >= next) {
			refresh(w);
			next = now + w->a->interval_ms;
		}
		draw(w, &tt);
		struct pollfd p = {.fd = tt.fd, .events = POLLIN};
		now = now_ms();
		int r = poll(&p, tt.fd >= 0 ? 1 : 0, next > now ? (int)(next - now) : 0);
		if (r > 0 && (p.revents & POLLIN)) {
			unsigned char k[64];
			ssize_t n = read(tt.fd, k, sizeof(k));
			bool go = true;
			for (size_t i = 0, u; go && n > 0 && i < (size_t)n; i += u)
				go = key(w, k + i, (size_t)n - i, &u);
			if (!go)
				break;
		} else if (r > 0 && (p.revents & (POLLHUP | POLLERR))) {
			break; /* the terminal is gone */
		}
	}
	tty_leave(&tt);
}

/* ---- -- COMMAND ------------------------------------------------------------ */

static int start_command(struct watch *w, bool tui)
{
	const struct watch_args *a = w->a;
	char *lib = launch_find_library(CMD);
	char *helper = lib && a->framework_counters ? launch_find_counters_helper(CMD) : NULL;
	if (!lib || (a->framework_counters && !helper)) {
		free(lib);
		return EXIT_INPUT;
	}
	const char *env_out = getenv("GPUMEMTRACE_OUTPUT");
	char *tmpl = launch_absolute_template(a->output		    ? a->output
					      : env_out && *env_out ? env_out
								    : "gpumemtrace.%p.gmt");
	int logfd = -1;
	if (tui) {
		char def[64];
		snprintf(def, sizeof(def), "gpumemtrace-watch.%d.log", (int)getpid());
		w->log = xstrdup(a->log ? a->log : def);
		logfd = open(w->log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (logfd < 0) {
			say_error(CMD, "--log %s: %s", w->log, strerror(errno));
			free(tmpl);
			free(helper);
			free(lib);
			return EXIT_INPUT;
		}
	}
	if (launch_list_create(CMD, &w->list) != 0) {
		free(tmpl);
		free(helper);
		free(lib);
		if (logfd >= 0)
			close(logfd);
		return EXIT_INPUT;
	}
	w->have_list = true;
	if (a->per_tensor) /* here: its lines reach the terminal, not the log */
		launch_per_tensor(CMD);
	if (a->framework_history)
		launch_set_history(a->history_entries);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		say_error(CMD, "cannot fork: %s", strerror(errno));
		return 126;
	}
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		launch_set_preload(lib);
		if (helper)
			launch_prepend_env("PYTHONPATH", helper);
		setenv("GPUMEMTRACE_OUTPUT", tmpl, 1);
		setenv("GPUMEMTRACE_TRACE_LIST", w->list.path, 1);
		if (logfd >= 0) {
			/* a session of its own: the terminal's hangup (ssh gone) and
			 * its keys never reach it, only the view's */
			setsid();
			int nul = open("/dev/null", O_RDONLY);
			if (nul >= 0)
				dup2(nul, 0);
			dup2(logfd, 1);
			dup2(logfd, 2);
		}
		execvp(a->command[0], a->command);
		int err = errno;
		fprintf(stderr, "gpumemtrace %s: cannot run '%s': %s\n", CMD, a->command[0],
			strerror(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	if (logfd >= 0)
		close(logfd);
	w->child = pid;
	size_t len = 0;
	for (int i = 0; i < a->ncommand && len + 2 < 200; i++)
		len +=
		    (size_t)snprintf(w->title + len, sizeof(w->title) - len, "%s%s", i ? " " : "",
				     i ? a->command[i] : path_basename(a->command[i]));
	snprintf(w->title + len, sizeof(w->title) - len, " (pid %d)", (int)pid);
	free(tmpl);
	free(helper);
	free(lib);
	return -1;
}

/* ---- the command ----------------------------------------------------------- */

static int watch_source(struct watch *w, bool tui)
{
	const struct watch_args *a = w->a;
	if (a->command)
		return start_command(w, tui);
	const char *arg = a->pos[0];
	struct stat st;
	char *path = NULL;
	if (all_digits(arg) && stat(arg, &st) != 0) {
		int rc;
		path = trace_of_pid(strtol(arg, NULL, 10), &rc);
		if (!path)
			return rc;
		w->writer = strtol(arg, NULL, 10);
	}
	int rc = open_trace(w, path ? path : arg);
	free(path);
	if (rc >= 0)
		return rc;
	snprintf(w->title, sizeof(w->title), "%s", path_basename(w->path));
	return -1;
}

/* --device N of a trace that will not grow (its trailer read, or its writer
 * gone) and has no device N: the one line and EXIT_USAGE, before anything
 * is shown, as every command says it. A trace still written may yet have
 * it: the view waits. -1 when fine. */
static int check_device(struct watch *w)
{
	if (!w->a->has_device || w->a->command)
		return -1;
	refresh(w);
	const struct trace *t = &w->lv.t;
	if (trace_device(t, w->a->device) || w->writer_other)
		return -1;
	if (!t->has_trailer && w->writer && writer_alive(w->writer, w->dev, w->ino))
		return -1;
	const char *paths[] = {w->path};
	struct rb_opts o = {
	    .has_device = true, .device = w->a->device, .paths = paths, .npaths = 1};
	return rb_check_device(CMD, &o, &w->lv.t);
}

static void say_end(struct watch *w, bool tui)
{
	if (w->note[0] && w->state != W_RUNNING)
		say_error(CMD, "%s: %s", w->path ? w->path : "", w->note);
	if (w->child && !w->child_done)
		fprintf(stderr, "gpumemtrace %s: %s runs on%s%s; its trace: %s\n", CMD, w->title,
			w->log ? "; its output goes to " : "", w->log ? w->log : "",
			w->path ? w->path : "(none yet)");
	else if (w->child && w->path && tui)
		fprintf(stderr, "gpumemtrace %s: trace written to %s%s%s\n", CMD, w->path,
			w->log ? "; the command's output is in " : "", w->log ? w->log : "");
}

static bool ended(const struct watch *w)
{
	if (w->child)
		return w->child_done && (!w->open || w->state != W_RUNNING);
	return w->state == W_FINISHED || w->state == W_GONE || w->state == W_DAMAGED;
}

static int snapshots(struct watch *w)
{
	if (w->child) { /* like run: ^C and ^\ go to the command, we stay to report */
		signal(SIGINT, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
	}
	for (;;) {
		/* --once: all that is there now, then what it means */
		while (refresh(w) && w->a->once)
			;
		if (ended(w) && w->open && w->state != W_DAMAGED)
			while (live_poll(&w->lv))
				;
		if (!print_snapshot(w))
			return EXIT_INPUT;
		if (w->a->once || ended(w) || got_quit)
			break;
		struct timespec ts = {(time_t)(w->a->interval_ms / 1000),
				      (long)(w->a->interval_ms % 1000) * 1000000};
		uint64_t until = now_ms() + w->a->interval_ms;
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !got_quit) {
			reap_child(w);
			if (w->child_done || now_ms() >= until)
				break;
		}
		if (got_quit)
			break;
	}
	return -1;
}

int cmd_watch(int argc, char **argv)
{
	setlocale(LC_CTYPE, "");
	const char *term = getenv("TERM");
	bool tty_out = isatty(1) && !(term && !strcmp(term, "dumb"));
	struct watch_args a = {.by = LIVE_BY_SITE, .sort = LIVE_SORT_LIVE};
	int rc = parse_args(argc, argv, &a, tty_out);
	if (rc >= 0) {
		free(a.pos);
		return rc;
	}
	bool tui = tty_out && !a.json && !a.once;
	struct watch w = {.a = &a, .by = (enum live_group)a.by, .sort = (enum live_sort)a.sort};
	w.lo.step_regex = a.step;
	w.one_device = a.has_device;
	w.device = a.device;
	w.utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
	regex_t re;
	if (a.step && regcomp(&re, a.step, REG_EXTENDED | REG_NOSUB) != 0) {
		free(a.pos);
		return say_usage_error(CMD, "--step: bad regular expression '%s'", a.step);
	}
	if (a.step)
		regfree(&re);
	struct sigaction sa = {.sa_handler = on_quit};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (tui)
		sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, NULL);
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);
	rc = watch_source(&w, tui);
	if (rc < 0)
		rc = check_device(&w);
	if (rc < 0) {
		if (tui)
			view(&w);
		else
			rc = snapshots(&w);
		say_end(&w, tui);
	}
	if (w.have_list) {
		unlink(w.list.path);
		close(w.list.fd);
		free(w.list.path);
	}
	if (w.open)
		live_close(&w.lv);
	if (w.child && w.child_done && w.path) /* as run does, once it ended */
		launch_name_frames(CMD, &w.path, 1);
	free(w.path);
	free(w.log);
	free(a.pos);
	if (rc >= 0)
		return rc;
	if (w.child && w.child_done)
		return w.child_status ? w.child_status : w.rc;
	return w.rc;
}
