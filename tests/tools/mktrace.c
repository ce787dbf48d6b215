/* mktrace OUT < SCRIPT: writes a trace from a line-per-record script, for the
 * integration tests of the CLI. Built to $(BUILD)/tests/unit-tools/mktrace.
 * Uses tests/tools/trace-builder.c, not the library's writer.
 *
 *   # comment
 *   header  [version=N] [header_size=N] [start_mono=N] [start_wall=N] [pid=N] [features=N]
 *           (must come first, if at all)
 *   process pid=N ppid=N [wall=N] [host=S] [exe=S] [arg=S]... [env=KEY=VALUE]...
 *   module  id=N bias=N start=N end=N path=S [buildid=HEX]
 *   device  ord=N name=S total=N [cc=MAJ.MIN] [driver=N] [uuid=HEX]
 *   stack   parent=N ip=N [parent=N ip=N]...      (nodes get ids 1, 2, ... in order)
 *   thread  tid=N name=S
 *   events  tid=N [base=N]                       (starts a batch; base: first ev's t)
 *   ev      api=NAME|N t=N [ptr=N] [size=N] [dev=N] [stack=N] [result=N] [aux=N] [aux2=N]
 *           (absolute values; dev defaults to the batch's previous device)
 *   lost    tid=N count=N t=N
 *   symbol  ip=N module=N func=S [file=S] [line=N]
 *   note    [level=N] text=S
 *   meminfo tid=N t=N [dev=N] free=N total=N api=NAME|N
 *   sample  t=N used=N total=N [nvml=N] [uuid=HEX] [process=N] [reason=N]
 *           (no process=: this process's usage unknown)
 *   range   tid=N t=N op=push|pop|start|end|mark|N [id=N] [source=N] [text=S]
 *   pyframe id=N func=S [file=S] [line=N]
 *   fwsnap  seq=N t=N [wall=N] [tid=N] [reason=NAME|N] [source=S] [flags=N] [max=N]
 *           [set=KEY=VALUE]...              (reason: requested oom exit change import)
 *   fwtrace seq=N [dev=N] [gap=1]           (starts a batch of history entries)
 *   fwe     action=NAME|N [addr=N] [size=N] [stream=N] [us=N] [stack=N]
 *           (NAME: PyTorch's, alloc free_requested ... oom snapshot; for oom
 *           addr is the device's free bytes)
 *   fwseg   seq=N addr=N total=N [dev=N] [stream=N] [flags=N] [stack=N]
 *           (starts a segment; its blocks follow)
 *   fwblk   addr=N size=N [req=N] state=NAME|N [stack=N]
 *           (NAME: inactive active_allocated active_pending_free)
 *   counters tid=N t=N [reason=periodic|oom|start|end|N] source=S [device=S] [ord=N]
 *           [v:NAME=N]...
 *   fwoom   tid=N t=N how=observer|excepthook|thread|at-exit|N source=S [type=S]
 *           [ord=N] [msg=S] [v:NAME=N]...
 *   exit    t=N [how=exit|_exit|N] [status=N] [signal=N]
 *   trailer t=N [events=N] [lost=N] [nodes=N] [reason=N]
 *           (events defaults to the events written so far, as the
 *           library's trailer counts them: a reader checks it)
 *   chunk                                        (ends the current chunk)
 *   raw     HEX                                  (payload bytes as given)
 *
 * Numbers take 0x prefixes; S may be "double quoted". */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumemtrace/format.h>

#include "trace-builder.h"

static const struct {
	const char *name;
	unsigned id;
} apis[] = {
#define X_(id, name, op, kind, space, aux) {#name, id},
    GMT_API_LIST(X_)
#undef X_
};

static int lineno;

/* The framework-history names (format.h's enums), kept here on their own
 * so mktrace checks the reader, not itself. */
static const char *const fw_actions[] = {"unknown",	   "alloc",	    "free_requested",
					 "free_completed", "segment_alloc", "segment_free",
					 "segment_map",	   "segment_unmap", "oom",
					 "snapshot",	   "annotate"};
static const char *const fw_states[] = {"inactive", "active_allocated", "active_pending_free"};
static const char *const fw_reasons[] = {"requested", "oom", "exit", "change", "import"};

static uint64_t name_or_num(const char *const *names, size_t n, const char *v, const char *key);

/* A batch of fwe lines (fwtrace) or fwblk lines (fwseg) being gathered. */
static struct {
	int kind; /* 0 none, 1 fwtrace, 2 fwseg */
	uint64_t seq, flags, addr, total, stream, stack;
	int64_t dev;
	size_t n;
	struct tb_fw_entry e[4096];
	struct tb_fw_block blk[4096];
} fw;

static void fw_end(struct tb *b)
{
	if (fw.kind == 1)
		tb_fwtrace(b, fw.seq, fw.dev, fw.flags, fw.n, fw.e);
	else if (fw.kind == 2)
		tb_fwseg(b, fw.seq, fw.dev, fw.addr, fw.total, fw.stream, fw.flags, fw.stack, fw.n,
			 fw.blk);
	fw.kind = 0;
	fw.n = 0;
}

__attribute__((format(printf, 1, 2))) static void die(const char *fmt, ...)
{
	fprintf(stderr, "mktrace: line %d: ", lineno);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

#define MAXTOK 256
struct kv {
	char *key, *val;
};

/* Splits into words; key=value pairs, values may be "quoted". */
static int tokenize(char *s, struct kv *out)
{
	int n = 0;
	while (*s) {
		while (isspace((unsigned char)*s))
			s++;
		if (!*s || *s == '#')
			break;
		if (n == MAXTOK)
			die("too many words%s", "");
		char *w = s, *o = s;
		char *eq = NULL;
		int quoted = 0;
		while (*s && (quoted || !isspace((unsigned char)*s))) {
			if (*s == '"') {
				quoted = !quoted;
				s++;
				continue;
			}
			if (*s == '\\' && quoted && s[1]) {
				s++;
				*o++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s;
				s++;
				continue;
			}
			if (*s == '=' && !eq && !quoted) {
				*o++ = 0;
				eq = o;
				s++;
				continue;
			}
			*o++ = *s++;
		}
		if (*s)
			s++;
		*o = 0;
		out[n].key = w;
		out[n].val = eq;
		n++;
	}
	return n;
}

static uint64_t num(const char *key, const char *v)
{
	if (!v || !*v)
		die("%s: missing value", key);
	char *end;
	errno = 0;
	uint64_t x = *v == '-' ? (uint64_t)strtoll(v, &end, 0) : strtoull(v, &end, 0);
	if (*end || errno)
		die("bad number '%s'", v);
	return x;
}

static const char *get(struct kv *t, int n, const char *key)
{
	for (int i = 1; i < n; i++)
		if (strcmp(t[i].key, key) == 0)
			return t[i].val ? t[i].val : "";
	return NULL;
}

static uint64_t getnum(struct kv *t, int n, const char *key, uint64_t def)
{
	const char *v = get(t, n, key);
	return v ? num(key, v) : def;
}

/* key=WORD as its index in words[], or key=N; 0 when absent. */
static uint64_t word(struct kv *t, int n, const char *key, const char *const *words, size_t nw)
{
	const char *v = get(t, n, key);
	for (size_t i = 0; v && i < nw; i++)
		if (strcmp(v, words[i]) == 0)
			return i;
	return v ? num(key, v) : 0;
}

/* The v:NAME=N words: names and values. */
static size_t values_of(struct kv *t, int n, const char **names, uint64_t *values)
{
	size_t nv = 0;
	for (int i = 1; i < n; i++)
		if (strncmp(t[i].key, "v:", 2) == 0) {
			names[nv] = t[i].key + 2;
			values[nv++] = num(t[i].key, t[i].val);
		}
	return nv;
}

static unsigned api_id(const char *v)
{
	if (!v)
		die("ev: api= is required%s", "");
	if (isdigit((unsigned char)*v))
		return (unsigned)num("api", v);
	for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++)
		if (strcmp(apis[i].name, v) == 0)
			return apis[i].id;
	die("unknown api '%s'", v);
	return 0;
}

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	while (s[0] && s[1] && n < cap) {
		unsigned b;
		if (sscanf(s, "%2x", &b) != 1)
			die("bad hex '%s'", s);
		out[n++] = (uint8_t)b;
		s += 2;
	}
	return n;
}

static uint64_t name_or_num(const char *const *names, size_t n, const char *v, const char *key)
{
	if (!v)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(v, names[i]) == 0)
			return i;
	return num(key, v);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mktrace OUT < SCRIPT\n");
		return 2;
	}
	struct tb *b = NULL;
	char line[8192];
	struct kv t[MAXTOK];
	int in_batch = 0, batch_started = 0;
	uint64_t batch_tid = 0, batch_base = 0;
	int have_base = 0;
	int64_t cur_dev = 0;
	uint64_t nevents = 0;
	while (fgets(line, sizeof(line), stdin)) {
		lineno++;
		line[strcspn(line, "\n")] = 0;
		int n = tokenize(line, t);
		if (n == 0)
			continue;
		const char *cmd = t[0].key;
		if (strcmp(cmd, "header") == 0) {
			if (b)
				die("header must come first%s", "");
			struct tb_header h = {0};
			h.version = (uint16_t)getnum(t, n, "version", 0);
			h.header_size = (uint16_t)getnum(t, n, "header_size", 0);
			h.start_mono_ns = getnum(t, n, "start_mono", 0);
			h.start_wall_ns = getnum(t, n, "start_wall", 0);
			h.pid = (uint32_t)getnum(t, n, "pid", 0);
			h.features = (uint32_t)getnum(t, n, "features", 0);
			b = tb_new(&h);
			continue;
		}
		if (!b)
			b = tb_new(NULL);
		if (fw.kind && strcmp(cmd, "fwe") != 0 && strcmp(cmd, "fwblk") != 0)
			fw_end(b);
		if (strcmp(cmd, "ev") != 0 && in_batch) {
			if (batch_started)
				tb_events_end(b);
			in_batch = batch_started = 0;
		}
		if (strcmp(cmd, "process") == 0) {
			const char *args[MAXTOK], *keys[MAXTOK], *vals[MAXTOK];
			int na = 0, ne = 0;
			for (int i = 1; i < n; i++) {
				if (strcmp(t[i].key, "arg") == 0)
					args[na++] = t[i].val ? t[i].val : "";
				if (strcmp(t[i].key, "env") == 0 && t[i].val) {
					char *eq = strchr(t[i].val, '=');
					if (!eq)
						die("env=%s: want KEY=VALUE", t[i].val);
					*eq = 0;
					keys[ne] = t[i].val;
					vals[ne++] = eq + 1;
				}
			}
			const char *host = get(t, n, "host"), *exe = get(t, n, "exe");
			tb_process(b, getnum(t, n, "pid", 0), getnum(t, n, "ppid", 0),
				   getnum(t, n, "wall", 0), host ? host : "", exe ? exe : "", na,
				   args, ne, keys, vals);
		} else if (strcmp(cmd, "module") == 0) {
			uint8_t bid[256];
			const char *h = get(t, n, "buildid"), *path = get(t, n, "path");
			size_t bl = h ? unhex(h, bid, sizeof(bid)) : 0;
			tb_module(b, getnum(t, n, "id", 0), getnum(t, n, "bias", 0),
				  getnum(t, n, "start", 0), getnum(t, n, "end", 0),
				  path ? path : "", bid, bl);
		} else if (strcmp(cmd, "device") == 0) {
			const char *name = get(t, n, "name"), *cc = get(t, n, "cc");
			unsigned maj = 0, min = 0;
			if (cc && sscanf(cc, "%u.%u", &maj, &min) != 2)
				die("cc=%s: want MAJOR.MINOR", cc);
			uint8_t uuid[16];
			const char *uh = get(t, n, "uuid");
			size_t ul = uh ? unhex(uh, uuid, sizeof(uuid)) : 0;
			tb_device(b, (int64_t)getnum(t, n, "ord", 0), name ? name : "",
				  ul ? uuid : NULL, ul, getnum(t, n, "total", 0), maj, min,
				  getnum(t, n, "driver", 0));
		} else if (strcmp(cmd, "stack") == 0) {
			uint64_t parents[MAXTOK], ips[MAXTOK];
			size_t np = 0, ni = 0;
			for (int i = 1; i < n; i++) {
				if (strcmp(t[i].key, "parent") == 0)
					parents[np++] = num("parent", t[i].val);
				else if (strcmp(t[i].key, "ip") == 0)
					ips[ni++] = num("ip", t[i].val);
			}
			if (np != ni)
				die("stack: parent= and ip= must pair up%s", "");
			tb_stack(b, np, parents, ips);
		} else if (strcmp(cmd, "thread") == 0) {
			const char *name = get(t, n, "name");
			tb_thread(b, getnum(t, n, "tid", 0), name ? name : "");
		} else if (strcmp(cmd, "events") == 0) {
			in_batch = 1;
			batch_started = 0;
			batch_tid = getnum(t, n, "tid", 1);
			have_base = get(t, n, "base") != NULL;
			batch_base = getnum(t, n, "base", 0);
			cur_dev = 0;
		} else if (strcmp(cmd, "ev") == 0) {
			if (!in_batch) {
				in_batch = 1;
				batch_started = 0;
				batch_tid = 1;
				have_base = 0;
				cur_dev = 0;
			}
			struct tb_event e = {0};
			e.time_ns = getnum(t, n, "t", 0);
			e.api = api_id(get(t, n, "api"));
			e.ptr = getnum(t, n, "ptr", 0);
			e.size = getnum(t, n, "size", 0);
			e.device = cur_dev = (int64_t)getnum(t, n, "dev", (uint64_t)cur_dev);
			e.stack_id = getnum(t, n, "stack", 0);
			e.result = getnum(t, n, "result", 0);
			e.aux = getnum(t, n, "aux", 0);
			e.aux2 = getnum(t, n, "aux2", 0);
			if (!batch_started) {
				tb_events_begin(b, batch_tid, have_base ? batch_base : e.time_ns);
				batch_started = 1;
			}
			tb_event(b, &e);
			nevents++;
		} else if (strcmp(cmd, "lost") == 0) {
			tb_lost(b, getnum(t, n, "tid", 0), getnum(t, n, "count", 0),
				getnum(t, n, "t", 0));
		} else if (strcmp(cmd, "symbol") == 0) {
			const char *fn = get(t, n, "func"), *file = get(t, n, "file");
			tb_symbol(b, getnum(t, n, "ip", 0), getnum(t, n, "module", 0), fn ? fn : "",
				  file ? file : "", getnum(t, n, "line", 0));
		} else if (strcmp(cmd, "note") == 0) {
			const char *text = get(t, n, "text");
			tb_note(b, getnum(t, n, "level", 0), text ? text : "");
		} else if (strcmp(cmd, "meminfo") == 0) {
			const char *api = get(t, n, "api");
			tb_meminfo(b, getnum(t, n, "tid", 0), getnum(t, n, "t", 0),
				   (int64_t)getnum(t, n, "dev", 0), getnum(t, n, "free", 0),
				   getnum(t, n, "total", 0), api ? api_id(api) : 0);
		} else if (strcmp(cmd, "sample") == 0) {
			uint8_t uuid[16];
			const char *uh = get(t, n, "uuid");
			size_t ul = uh ? unhex(uh, uuid, sizeof(uuid)) : 0;
			int known = get(t, n, "process") != NULL;
			tb_sample(b, getnum(t, n, "t", 0), getnum(t, n, "nvml", 0), uuid, ul,
				  getnum(t, n, "used", 0), getnum(t, n, "total", 0),
				  known ? GMT_SAMPLE_PROCESS_KNOWN : 0, getnum(t, n, "process", 0),
				  getnum(t, n, "reason", 0));
		} else if (strcmp(cmd, "range") == 0) {
			static const char *const ops[] = {"",	   "push", "pop",
							  "start", "end",  "mark"};
			const char *op = get(t, n, "op"), *text = get(t, n, "text");
			uint64_t opn = 0;
			for (unsigned i = 1; op && i < sizeof ops / sizeof *ops; i++)
				if (strcmp(op, ops[i]) == 0)
					opn = i;
			if (!opn)
				opn = getnum(t, n, "op", 0);
			tb_range(b, getnum(t, n, "tid", 0), getnum(t, n, "t", 0), opn,
				 getnum(t, n, "id", 0), getnum(t, n, "source", 0),
				 text ? text : "");
		} else if (strcmp(cmd, "pyframe") == 0) {
			const char *fn = get(t, n, "func"), *file = get(t, n, "file");
			tb_pyframe(b, getnum(t, n, "id", 0), fn ? fn : "", file ? file : "",
				   getnum(t, n, "line", 0));
		} else if (strcmp(cmd, "fwsnap") == 0) {
			const char *keys[MAXTOK], *vals[MAXTOK], *src = get(t, n, "source");
			int ns = 0;
			for (int i = 1; i < n; i++) {
				if (strcmp(t[i].key, "set") != 0 || !t[i].val)
					continue;
				char *eq = strchr(t[i].val, '=');
				if (!eq)
					die("set=%s: want KEY=VALUE", t[i].val);
				*eq = 0;
				keys[ns] = t[i].val;
				vals[ns++] = eq + 1;
			}
			tb_fwsnap(b, getnum(t, n, "tid", 1), getnum(t, n, "t", 0),
				  getnum(t, n, "wall", 0), getnum(t, n, "seq", 1),
				  name_or_num(fw_reasons, 5, get(t, n, "reason"), "reason"),
				  src ? src : "torch", getnum(t, n, "flags", 3),
				  getnum(t, n, "max", 0), (size_t)ns, keys, vals);
		} else if (strcmp(cmd, "fwtrace") == 0 || strcmp(cmd, "fwseg") == 0) {
			fw.kind = cmd[2] == 't' ? 1 : 2;
			fw.seq = getnum(t, n, "seq", 1);
			fw.dev = (int64_t)getnum(t, n, "dev", 0);
			fw.flags = fw.kind == 1 ? (getnum(t, n, "gap", 0) ? GMT_FWTRACE_GAP : 0)
						: getnum(t, n, "flags", 0);
			fw.addr = getnum(t, n, "addr", 0);
			fw.total = getnum(t, n, "total", 0);
			fw.stream = getnum(t, n, "stream", 0);
			fw.stack = getnum(t, n, "stack", 0);
		} else if (strcmp(cmd, "fwe") == 0) {
			if (fw.kind != 1 || fw.n == sizeof fw.e / sizeof *fw.e)
				die("fwe outside a fwtrace batch (or too many)%s", "");
			fw.e[fw.n++] = (struct tb_fw_entry){
			    name_or_num(fw_actions, sizeof fw_actions / sizeof *fw_actions,
					get(t, n, "action"), "action"),
			    getnum(t, n, "addr", 0),
			    getnum(t, n, "size", 0),
			    getnum(t, n, "stream", 0),
			    getnum(t, n, "us", 0),
			    getnum(t, n, "stack", 0)};
		} else if (strcmp(cmd, "fwblk") == 0) {
			if (fw.kind != 2 || fw.n == sizeof fw.blk / sizeof *fw.blk)
				die("fwblk outside a fwseg (or too many)%s", "");
			fw.blk[fw.n++] = (struct tb_fw_block){
			    getnum(t, n, "addr", 0), getnum(t, n, "size", 0),
			    getnum(t, n, "req", 0),
			    name_or_num(fw_states, 3, get(t, n, "state"), "state"),
			    getnum(t, n, "stack", 0)};
		} else if (strcmp(cmd, "counters") == 0 || strcmp(cmd, "fwoom") == 0) {
			const char *names[MAXTOK];
			uint64_t values[MAXTOK];
			size_t nv = values_of(t, n, names, values);
			const char *src = get(t, n, "source"), *dev = get(t, n, "device");
			int64_t ord = (int64_t)getnum(t, n, "ord", (uint64_t)-1);
			if (cmd[0] == 'c') {
				static const char *const why[] = {"periodic", "oom", "start",
								  "end"};
				tb_counters(b, getnum(t, n, "tid", 0), getnum(t, n, "t", 0),
					    word(t, n, "reason", why, 4), src ? src : "",
					    dev ? dev : "", ord, nv, names, values);
			} else {
				static const char *const how[] = {"observer", "excepthook",
								  "thread", "at-exit"};
				const char *type = get(t, n, "type"), *msg = get(t, n, "msg");
				tb_fwoom(b, getnum(t, n, "tid", 0), getnum(t, n, "t", 0),
					 word(t, n, "how", how, 4), src ? src : "",
					 type ? type : "", ord, nv, names, values, msg ? msg : "");
			}
		} else if (strcmp(cmd, "exit") == 0) {
			static const char *const how[] = {"exit", "_exit"};
			tb_exit(b, getnum(t, n, "t", 0), word(t, n, "how", how, 2),
				(int64_t)getnum(t, n, "status", 0), getnum(t, n, "signal", 0));
		} else if (strcmp(cmd, "trailer") == 0) {
			tb_trailer(b, getnum(t, n, "t", 0), getnum(t, n, "events", nevents),
				   getnum(t, n, "lost", 0), getnum(t, n, "nodes", 0),
				   getnum(t, n, "reason", 0));
		} else if (strcmp(cmd, "chunk") == 0) {
			tb_chunk(b);
		} else if (strcmp(cmd, "raw") == 0) {
			uint8_t buf[4096];
			size_t len = n > 1 ? unhex(t[1].key, buf, sizeof(buf)) : 0;
			tb_raw(b, buf, len);
		} else {
			die("unknown line '%s'", cmd);
		}
	}
	if (!b)
		b = tb_new(NULL);
	fw_end(b);
	if (in_batch && batch_started)
		tb_events_end(b);
	if (tb_write(b, argv[1]) != 0) {
		perror(argv[1]);
		return 1;
	}
	tb_free(b);
	return 0;
}
