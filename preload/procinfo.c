/* The PROCESS record: who the process is (pid, host, executable), its
 * command line and the environment that shapes GPU memory
 * (preload/writer.h). Written once, as the trace is created. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/codec.h"
#include "common/frameworks.h"
#include "gpumemtrace/format.h"
#include "preload/writer.h"

/* The environment that shapes GPU memory, and the process's place in its
 * job, kept in the process record: the framework table's variables
 * (common/frameworks.c) by name, then every variable with one of its
 * prefixes (at most GMT_ENV_PREFIXED of them). */
extern char **environ;

/* The value of environ's entry e when its name has one of the table's
 * prefixes; *klen the name's length. */
static const char *prefixed_env(const char *e, size_t *klen)
{
	const char *eq = strchr(e, '=');
	if (!eq)
		return NULL;
	for (size_t i = 0; i < gmt_fw_nenv; i++)
		if (gmt_fw_env[i].how == GMT_ENV_PREFIX &&
		    strncmp(e, gmt_fw_env[i].name, strlen(gmt_fw_env[i].name)) == 0) {
			*klen = (size_t)(eq - e);
			return eq + 1;
		}
	return NULL;
}

/* ---- privacy: what may hold a secret is written as <redacted> ---- */

static const char redacted[] = "<redacted>";

/* The one rule for names (of a variable, an option, a key=value word):
 * one that suggests a secret, in any case. Every value the PROCESS record
 * takes from the environment or the command line passes here. */
static int secret_name(const char *name, size_t n)
{
	static const char *const words[] = {"PASSWORD", "PASSWD", "TOKEN",
					    "SECRET",	"KEY",	  "CREDENTIAL"};
	for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
		size_t k = strlen(words[w]);
		for (size_t i = 0; i + k <= n; i++)
			if (strncasecmp(name + i, words[w], k) == 0)
				return 1;
	}
	return 0;
}

/* An argv word's name, where it has one: "--api-key" of "--api-key=x" or
 * of "--api-key" (then *eq is NULL), "API_TOKEN" of "API_TOKEN=x". */
static const char *arg_name(const char *a, size_t len, size_t *n, const char **eq)
{
	*eq = memchr(a, '=', len);
	size_t dashes = 0;
	while (dashes < len && dashes < 2 && a[dashes] == '-')
		dashes++;
	if (!dashes && !*eq)
		return NULL;
	*n = (*eq ? (size_t)(*eq - a) : len) - dashes;
	return a + dashes;
}

/* How many bytes argv word a (len bytes) takes in the record, as written
 * by put_arg; *secret_next: the word names a secret and the next one is
 * its value ("--password hunter2"). */
static size_t arg_size(const char *a, size_t len, int prev_secret, int *secret_next)
{
	size_t n;
	const char *eq;
	const char *name = arg_name(a, len, &n, &eq);
	*secret_next = 0;
	if (prev_secret && !(len && a[0] == '-'))
		return sizeof redacted - 1;
	if (!name || !secret_name(name, n))
		return len;
	if (!eq) {
		*secret_next = 1;
		return len;
	}
	return (size_t)(eq - a) + 1 + sizeof redacted - 1;
}

/* Word a as the record keeps it, into p: redacted as arg_size says. */
static uint8_t *put_arg(uint8_t *p, const char *a, size_t len, int prev_secret)
{
	int next;
	size_t n = arg_size(a, len, prev_secret, &next);
	if (n == len)
		return gmt_writer_put_str(p, a, len);
	p = gmt_put_varint(p, n);
	size_t keep = n - (sizeof redacted - 1); /* "--api-key=" or nothing */
	memcpy(p, a, keep);
	memcpy(p + keep, redacted, sizeof redacted - 1);
	return p + n;
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

void gmt_writer_process(struct gmt_writer *w)
{
	char host[256] = "", exe[4096] = "";
	gethostname(host, sizeof host - 1);
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[el > 0 ? el : 0] = '\0';
	static char cmdline[32768];
	size_t cl = read_small_file("/proc/self/cmdline", cmdline, sizeof cmdline);

	/* each word may grow by "<redacted>", and takes a length */
	size_t words = 1;
	for (size_t i = 0; i < cl; i++)
		words += cmdline[i] == '\0';
	size_t need = 64 + strlen(host) + strlen(exe) + cl + 2 * GMT_VARINT_MAX * 64 +
		      words * (sizeof redacted + GMT_VARINT_MAX);
	/* Read once: what is sized is what is written, should the program
	 * change its environment meanwhile. */
	struct {
		const char *k, *v;
		size_t kl, vl;
	} env[GMT_ENV_NAMED_MAX + GMT_ENV_PREFIXED];
	size_t nenv = 0, nprefixed = 0;
	for (size_t i = 0; i < gmt_fw_nenv && nenv < GMT_ENV_NAMED_MAX; i++) {
		const char *k = gmt_fw_env[i].name;
		const char *v = gmt_fw_env[i].how == GMT_ENV_NAME ? getenv(k) : NULL;
		if (v)
			env[nenv++] = (typeof(env[0])){k, v, strlen(k), strlen(v)};
	}
	for (char **e = environ; e && *e && nprefixed < GMT_ENV_PREFIXED; e++) {
		size_t kl;
		const char *v = prefixed_env(*e, &kl);
		if (v) {
			env[nenv++] = (typeof(env[0])){*e, v, kl, strlen(v)};
			nprefixed++;
		}
	}
	for (size_t i = 0; i < nenv; i++) {
		if (secret_name(env[i].k, env[i].kl)) {
			env[i].v = redacted;
			env[i].vl = sizeof redacted - 1;
		}
		need += env[i].kl + env[i].vl + 2 * GMT_VARINT_MAX;
	}
	uint8_t *p = gmt_writer_room(w, need);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_PROCESS);
	p = gmt_put_varint(p, (uint64_t)getpid());
	p = gmt_put_varint(p, (uint64_t)getppid());
	p = gmt_put_varint(p, gmt_wall_ns());
	p = gmt_writer_put_str(p, host, strlen(host));
	p = gmt_writer_put_str(p, exe, strlen(exe));
	uint64_t argc = 0;
	for (size_t i = 0; i < cl; i++)
		argc += cmdline[i] == '\0';
	if (cl && cmdline[cl - 1] != '\0')
		argc++; /* truncated last argument */
	if (w->omit_argv)
		argc = cl = 0; /* GPUMEMTRACE_RECORD_ARGV=0 */
	p = gmt_put_varint(p, argc);
	int secret = 0;
	for (size_t i = 0; i < cl;) {
		size_t k = strnlen(cmdline + i, cl - i);
		int next;
		arg_size(cmdline + i, k, secret, &next);
		p = put_arg(p, cmdline + i, k, secret);
		secret = next;
		i += k + 1;
	}
	p = gmt_put_varint(p, nenv);
	for (size_t i = 0; i < nenv; i++) {
		p = gmt_writer_put_str(p, env[i].k, env[i].kl);
		p = gmt_writer_put_str(p, env[i].v, env[i].vl);
	}
	gmt_writer_commit(w, p);
}
