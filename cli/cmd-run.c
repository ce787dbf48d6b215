/* gpumemtrace run: trace a command with the preload library, pass its exit
 * status through, then report on the trace(s) it wrote. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/launch.h"
#include "cli/options.h"
#include "analysis/trace.h"

#define CMD "run"

static const char about[] =
    "Runs COMMAND with libgpumemtrace.so preloaded, returns its exit status,\n"
    "then prints the summary of every trace it wrote and their paths. The\n"
    "report goes to stderr, so the command's own stdout stays clean.\n";
static const char more[] =
    "The library is found next to the CLI (../lib/libgpumemtrace.so when\n"
    "installed, the same directory in a build tree); GPUMEMTRACE_LIBRARY\n"
    "overrides it. It is prepended to LD_PRELOAD, and NVTX_INJECTION64_PATH\n"
    "is set to it unless already set.\n"
    "\n"
    "--framework-counters prepends the helper folder (../share/gpumemtrace/\n"
    "counters when installed by make, ../_counters in the Python package,\n"
    "python/gpumemtrace/_counters in a source tree) to\n"
    "PYTHONPATH: its sitecustomize.py writes PyTorch's, JAX's and TF's own\n"
    "memory counters into the trace once the program has imported one, every\n"
    "GPUMEMTRACE_SAMPLE_MS and at each PyTorch OOM, and every framework\n"
    "out-of-memory error with its message and figures: PyTorch's (its OOM\n"
    "observer: caught ones too), and PyTorch's, JAX's, TF's and CuPy's that\n"
    "reach the top of a thread; then it runs the program's own\n"
    "sitecustomize. Without the flag nothing is added.\n"
    "\n"
    "--framework-history also has the helper turn on PyTorch's allocator\n"
    "history (torch.cuda.memory._record_memory_history, Python stacks, at\n"
    "most --history-entries entries: PyTorch keeps the last N, each a few\n"
    "hundred bytes to a few KB of host memory) once the program has\n"
    "initialised CUDA itself, with the native allocator only. At each\n"
    "out-of-memory and at exit it writes torch.cuda.memory._snapshot() into\n"
    "the trace (the entries not written before, every segment and block),\n"
    "and before the program changes the recording itself. PyTorch documents\n"
    "about 2 us per allocation for the history.\n"
    "\n"
    "Each traced process adds its trace's path to a private list that run\n"
    "makes in $TMPDIR (GPUMEMTRACE_TRACE_LIST): run reports exactly those\n"
    "traces, never one of another run in the same directory.\n"
    "\n"
    "Once COMMAND has ended, run names the frames of its traces from the module\n"
    "files (as 'gpumemtrace symbolize' does), outside the traced processes, so\n"
    "the traces read with names on another machine; --no-symbolize skips it.\n"
    "\n"
    "exit status: COMMAND's own status (128+N when killed by signal N); when\n"
    "COMMAND exits 0, 1 if --check-max-peak or --check-max-smi failed, 3 or 4\n"
    "if a trace could not be read (or is gone), 3 if a gate was given and no trace\n"
    "was written (a gate never passes on nothing; --allow-no-trace lets it)\n"
    "or a trace lost events or is incomplete (--allow-lost judges it);\n"
    "126/127 if COMMAND cannot be run; 2 on a usage error; 3 if the list\n"
    "cannot be made (COMMAND is not run).\n"
    "\n"
    "examples:\n"
    "  gpumemtrace run -- python train.py\n"
    "  gpumemtrace run --check-max-peak 8GiB -- pytest tests/\n"
    "  gpumemtrace run --check-max-smi 10GiB -- python train.py   # nvidia-smi's view\n"
    "  gpumemtrace run -o 'runs/%h.%p.gmt' --no-follow -- ./my_app --batch 64\n"
    "  gpumemtrace run --per-tensor -- python train.py   # a stack per tensor\n"
    "\n"
    "--per-tensor sets PYTORCH_NO_CUDA_MEMORY_CACHING=1,\n"
    "XLA_PYTHON_CLIENT_ALLOCATOR=platform and TF_GPU_ALLOCATOR=cuda_malloc_async\n"
    "for COMMAND.\n";
static const struct opt_usage usage = {.name = "run",
				       .args = "-- COMMAND [ARGS...]",
				       .min_args = 0,
				       .about = about,
				       .more = more,
				       .stop_at_arg = true};

struct run_args {
	const char *output, *stack_depth, *max_peak, *max_smi, *history_entries;
	bool no_follow, quiet, allow_no_trace, allow_lost, per_tensor, framework_counters,
	    framework_history, no_symbolize;
	char **command; /* malloc'd, NULL-terminated */
};

/* No trace came back. A gate cannot judge nothing: a preload that failed
 * silently must not pass CI (exit 3, unless --allow-no-trace). */
static int no_trace(const struct run_args *a, int status)
{
	if (status == 126 || status == 127)
		return 0; /* COMMAND never ran: its own line said why */
	if ((a->max_peak || a->max_smi) && !a->allow_no_trace) {
		fprintf(stderr,
			"gpumemtrace run: --check-max-%s: no trace was written, so "
			"nothing was checked (the command made no CUDA allocation call, or "
			"the library could not write its trace: see the lines above; "
			"--allow-no-trace passes such a run)\n",
			a->max_peak ? "peak" : "smi");
		return EXIT_INPUT;
	}
	fprintf(stderr, "gpumemtrace run: no trace written (the command made no CUDA "
			"allocation call, or the library could not write its trace)\n");
	return 0;
}

static int parse_args(int argc, char **argv, struct run_args *a)
{
	const struct option opts[] = {
	    OPT_FILE("output", &a->output, "TEMPLATE",
		     "trace path template (GPUMEMTRACE_OUTPUT): %p pid,\n"
		     "%h host, %r rank; default $GPUMEMTRACE_OUTPUT if\n"
		     "exported, else gpumemtrace.%p.gmt in the current\n"
		     "directory (a relative path is made absolute)",
		     .short_name = 'o'),
	    OPT_STRING("stack-depth", &a->stack_depth, "N",
		       "native frames per event (GPUMEMTRACE_STACK_DEPTH)"),
	    OPT_STRING("check-max-peak", &a->max_peak, "SIZE",
		       "also gate like 'gpumemtrace check --max-peak SIZE':\n"
		       "the traced allocations' peak"),
	    OPT_STRING("check-max-smi", &a->max_smi, "SIZE",
		       "also gate like 'gpumemtrace check --max-smi SIZE':\n"
		       "what nvidia-smi showed for the process"),
	    OPT_BOOL("allow-no-trace", &a->allow_no_trace,
		     "let the gate pass a run that wrote no trace (else exit 3)"),
	    OPT_BOOL("allow-lost", &a->allow_lost,
		     "let the gate judge a trace that lost events or is\n"
		     "incomplete (else exit 3, as 'check --allow-lost')"),
	    OPT_BOOL("framework-counters", &a->framework_counters,
		     "also record PyTorch's, JAX's and TF's own memory\n"
		     "counters (a Python helper on PYTHONPATH)"),
	    OPT_BOOL("framework-history", &a->framework_history,
		     "also record PyTorch's allocator history and its\n"
		     "segments and blocks (torch.cuda.memory snapshots at\n"
		     "each OOM and at exit; implies --framework-counters)"),
	    OPT_STRING("history-entries", &a->history_entries, "N",
		       "the history's bound: PyTorch keeps its last N\n"
		       "entries (default 100000; implies --framework-history)"),
	    OPT_BOOL("no-follow", &a->no_follow,
		     "trace only COMMAND's own process, not its children"),
	    OPT_BOOL("quiet", &a->quiet, "print only the trace paths, no summary",
		     .short_name = 'q'),
	    OPT_BOOL("no-symbolize", &a->no_symbolize,
		     "leave the traces' frames unnamed (reports on this\nmachine still name them "
		     "from the module files)"),
	    OPT_BOOL("per-tensor", &a->per_tensor,
		     "turn the frameworks' caching allocators off, so every\n"
		     "tensor is a driver call with its own stack (slower;\n"
		     "the peak differs from a cached run's)"),
	    OPT_END(),
	};
	const char **args;
	int n;
	int rc = opt_parse(&usage, opts, argc, argv, &args, &n);
	if (rc >= 0)
		return rc;
	a->command = (char **)args;
	if (n == 0)
		return say_usage_error(CMD,
				       "missing COMMAND (gpumemtrace run [OPTIONS] -- COMMAND)");
	uint64_t v;
	if (a->stack_depth && opt_parse_uint(CMD, "--stack-depth", a->stack_depth, &v) >= 0)
		return EXIT_USAGE;
	if (a->stack_depth && v > 256)
		return say_usage_error(CMD, "--stack-depth: at most 256, not %s", a->stack_depth);
	if (a->max_peak && parse_size(a->max_peak, &v) != 0)
		return say_usage_error(CMD, "--check-max-peak: bad size '%s' (e.g. 8GiB, 512MiB)",
				       a->max_peak);
	if (a->max_smi && parse_size(a->max_smi, &v) != 0)
		return say_usage_error(CMD, "--check-max-smi: bad size '%s' (e.g. 8GiB, 512MiB)",
				       a->max_smi);
	if (a->output && !*a->output)
		return say_usage_error(CMD, "--output: empty template");
	return launch_history_args(CMD, a->history_entries, &a->framework_history,
				   &a->framework_counters);
}

/* Runs the command; returns its status as a shell reports it. */
static int run_child(const struct run_args *a)
{
	/* Like a shell: ^C and ^\ go to the command (same process group), and
	 * we stay to report once it is gone. */
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		say_error(CMD, "cannot fork: %s", strerror(errno));
		return 126;
	}
	if (pid == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		signal(SIGPIPE, SIG_DFL); /* main() ignores it; the command must not inherit that */
		if (a->no_follow) {
			char pidbuf[24];
			snprintf(pidbuf, sizeof(pidbuf), "%d", (int)getpid());
			setenv("GPUMEMTRACE_PID_ONLY", pidbuf, 1);
		}
		execvp(a->command[0], a->command);
		int err = errno;
		say_error(CMD, "cannot run '%s': %s", a->command[0], strerror(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			say_error(CMD, "waitpid: %s", strerror(errno));
			status = 126 << 8;
			break;
		}
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* Runs a report command with its stdout on our stderr. */
static int report_to_stderr(int (*fn)(int, char **), int argc, char **argv)
{
	fflush(stdout);
	int saved = dup(1);
	if (saved < 0 || dup2(2, 1) < 0)
		return fn(argc, argv);
	int rc = fn(argc, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	return rc;
}

int cmd_run(int argc, char **argv)
{
	struct run_args a = {0};
	int rc = parse_args(argc, argv, &a);
	char *lib = rc < 0 ? launch_find_library(CMD) : NULL;
	char *helper = lib && a.framework_counters ? launch_find_counters_helper(CMD) : NULL;
	if (!lib || (a.framework_counters && !helper)) {
		free(lib);
		free(a.command);
		return rc >= 0 ? rc : EXIT_INPUT;
	}
	/* -o, else the template the user exported, else the default */
	const char *env_out = getenv("GPUMEMTRACE_OUTPUT");
	char *tmpl = launch_absolute_template(a.output		    ? a.output
					      : env_out && *env_out ? env_out
								    : "gpumemtrace.%p.gmt");
	struct launch_list list;
	if (launch_list_create(CMD, &list) != 0) {
		free(helper);
		free(tmpl);
		free(lib);
		free(a.command);
		return EXIT_INPUT;
	}
	const char *outer_env = getenv("GPUMEMTRACE_TRACE_LIST");
	char *outer = outer_env && *outer_env ? xstrdup(outer_env) : NULL;

	launch_set_preload(lib);
	if (helper)
		launch_prepend_env("PYTHONPATH", helper);
	if (a.framework_history)
		launch_set_history(a.history_entries);
	setenv("GPUMEMTRACE_OUTPUT", tmpl, 1);
	setenv("GPUMEMTRACE_TRACE_LIST", list.path, 1);
	if (a.stack_depth)
		setenv("GPUMEMTRACE_STACK_DEPTH", a.stack_depth, 1);
	if (a.per_tensor)
		launch_per_tensor(CMD);
	int status = run_child(&a);
	/* The report must not trace itself. */
	unsetenv("LD_PRELOAD");

	int npaths = 0;
	bool missing = false;
	char **found = launch_list_read(CMD, &list, &npaths, &missing);
	unlink(list.path);
	close(list.fd);
	launch_list_forward(outer, found, npaths);
	char **paths = xcalloc((size_t)npaths + 6, sizeof(*paths));
	for (int i = 0; i < npaths; i++)
		paths[5 + i] = found[i];

	if (!a.no_symbolize)
		launch_name_frames(CMD, found, npaths);
	int report_rc = 0;
	if (npaths == 0 && !missing) {
		report_rc = no_trace(&a, status);
	} else {
		if (!a.quiet) {
			paths[4] = "summary";
			report_rc = report_to_stderr(cmd_summary, npaths + 1, paths + 4);
		}
		if ((a.max_peak || a.max_smi) && report_rc == 0) {
			/* check [--allow-lost] [--max-peak SIZE] [--max-smi SIZE] TRACE... */
			char **cp = xcalloc((size_t)npaths + 7, sizeof(*cp));
			int k = 0;
			cp[k++] = "check";
			if (a.allow_lost)
				cp[k++] = "--allow-lost";
			if (a.max_peak) {
				cp[k++] = "--max-peak";
				cp[k++] = (char *)a.max_peak;
			}
			if (a.max_smi) {
				cp[k++] = "--max-smi";
				cp[k++] = (char *)a.max_smi;
			}
			for (int i = 0; i < npaths; i++)
				cp[k++] = found[i];
			report_rc = report_to_stderr(cmd_check, k, cp);
			free(cp);
		}
		for (int i = 0; i < npaths; i++)
			fprintf(stderr, "gpumemtrace run: trace written to %s\n", paths[5 + i]);
	}
	if (missing && report_rc == 0)
		report_rc = EXIT_INPUT;
	for (int i = 0; i < npaths; i++)
		free(found[i]);
	free(found);
	free(paths);
	free(list.path);
	free(outer);
	free(tmpl);
	free(helper);
	free(lib);
	free(a.command);
	return status != 0 ? status : report_rc;
}
