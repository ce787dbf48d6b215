/* gpumemtrace import SNAPSHOT -o TRACE: a PyTorch memory snapshot pickle
 * written out as a trace (reader/snapimport.h says how it maps). Every
 * command reads the pickle itself too; import keeps the converted trace. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "cli/output.h"
#include "analysis/diag.h"
#include "reader/pickle.h"
#include "reader/snapimport.h"

#define CMD "import"

static const char about[] =
    "Converts a PyTorch memory snapshot, the pickle that\n"
    "torch.cuda.memory._dump_snapshot() writes, into a trace: its segments\n"
    "become the device's allocations (cudaMalloc, or cuMemCreate + cuMemMap\n"
    "for expandable segments), its frames the stacks (Python frames, and C++\n"
    "frames in modules named after their library), allocator_settings the\n"
    "run's PYTORCH_CUDA_ALLOC_CONF. A history that starts mid-run is rebuilt\n"
    "from the segments at its end, and a warning NOTE says how much was\n"
    "reserved before its first entry. Every command also reads a snapshot\n"
    "directly (recognised by its content, whatever its name): import keeps\n"
    "the converted trace, which reads faster and is smaller.\n"
    "\n"
    "Only data is read: a pickle that would import or call anything (GLOBAL,\n"
    "REDUCE, ...) is refused with one line, as are a truncated or malformed\n"
    "one (exit 4). The trace is written to a temporary file beside TRACE,\n"
    "mode 0600, and renamed over it when whole.\n"
    "\n"
    "examples:\n"
    "  gpumemtrace import snapshot.pickle -o run.gmt\n"
    "  gpumemtrace summary snapshot.pickle        # the same, without keeping a trace\n";

static const struct opt_usage usage = {
    .name = CMD, .args = "SNAPSHOT", .min_args = 1, .about = about};

/* The exit code of a failed conversion, after its one line. */
static int failed(const char *path, const struct pk_error *e)
{
	if (e->code == PK_ERR_IO || e->code == PK_ERR_NOMEM) {
		say_error(CMD, "cannot read %s: %s", path, e->msg);
		return EXIT_INPUT;
	}
	if (e->offset)
		say_error(CMD, "%s: PyTorch snapshot: %s (at byte %llu)", path, e->msg,
			  (unsigned long long)e->offset);
	else
		say_error(CMD, "%s: PyTorch snapshot: %s", path, e->msg);
	return EXIT_TRACE;
}

/* The input, checked: a regular file that begins as a pickle. */
static int open_input(const char *path, int *fd, uint64_t *size)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (*fd < 0 || fstat(*fd, &st) < 0) {
		say_error(CMD, "cannot open %s: %s", path, strerror(errno));
		return EXIT_INPUT;
	}
	if (!S_ISREG(st.st_mode)) {
		say_error(CMD, "cannot open %s: %s", path,
			  S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
		return EXIT_INPUT;
	}
	uint8_t head[2];
	*size = (uint64_t)st.st_size;
	if (pread(*fd, head, 2, 0) != 2 || !pk_sniff(head, 2)) {
		say_error(CMD,
			  "%s: not a PyTorch memory snapshot (a pickle of protocol 2 or later)",
			  path);
		return EXIT_TRACE;
	}
	return -1;
}

int cmd_import(int argc, char **argv)
{
	const char *out = NULL;
	bool has_out = false;
	const struct option opts[] = {
	    OPT_FILE("output", &out, "FILE", "the trace to write", .short_name = 'o',
		     .required = true, .given = &has_out),
	    OPT_END(),
	};
	const char **paths;
	int npaths;
	int rc = opt_parse(&usage, opts, argc, argv, &paths, &npaths);
	if (rc >= 0)
		return rc;
	if (npaths > 1) {
		free(paths);
		return say_usage_error(CMD, "one SNAPSHOT at a time");
	}
	int in = -1;
	uint64_t size;
	struct cli_out o;
	rc = open_input(paths[0], &in, &size);
	if (rc < 0)
		rc = cli_out_open(&o, CMD, out, paths, 1);
	if (rc < 0) {
		struct pk_error e;
		/* a trace holds the run's settings and command line: private */
		if (o.tmp)
			fchmod(fileno(o.f), 0600);
		if (snap_import(in, size, fileno(o.f), paths[0], true, &e)) {
			rc = e.code == PK_ERR_IO && strstr(e.msg, "converted trace")
				 ? (say_error(CMD, "cannot write %s: %s", out, e.msg), EXIT_INPUT)
				 : failed(paths[0], &e);
			cli_out_close(&o, CMD, false);
		} else {
			rc = cli_out_close(&o, CMD, true);
			rc = rc < 0 ? 0 : rc;
		}
	}
	if (in >= 0)
		close(in);
	free(paths);
	return rc;
}
