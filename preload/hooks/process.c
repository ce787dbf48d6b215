/* The ends of a process image that skip exit(): _exit and _Exit (how
 * os._exit and multiprocessing workers end) and exec. Each has the flush
 * thread write the trace and its trailer first. They are async-signal-safe
 * and signal handlers call them, so nothing here mallocs or locks. And
 * exit itself, for threads that race it. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/hooks/hooks.h"

typedef void (*exit_fn)(int);
typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

/* The real functions, found once by our constructor and never on these
 * paths: dlsym takes the loader's lock, which a dlopen holds for as long as
 * the library it opens runs its constructors (forever, for one that never
 * returns), and the process could not end. Another library's constructor
 * that ends the process before ours has run finds them in libc's own
 * symbol table, which takes no loader lock. */
enum {
	END_EXIT,
	END__EXIT,
	END__EXIT_UPPER,
	END_EXECVE,
	END_EXECV,
	END_EXECVP,
	END_EXECVPE,
	END_FEXECVE,
	END_COUNT
};
static const char *const end_names[END_COUNT] = {"exit",  "_exit",  "_Exit",   "execve",
						 "execv", "execvp", "execvpe", "fexecve"};
static void *end_fns[END_COUNT];

__attribute__((constructor)) static void find_process_ends(void)
{
	for (int i = 0; i < END_COUNT; i++) {
		void *fn = gmt_libc_next(end_names[i]);
		if (!fn) {
			dlerror(); /* ours must not show in the program's dlerror() */
			fn = gmt_libc_find(end_names[i]);
		}
		/* Pairs with the acquire load in real_end. */
		__atomic_store_n(&end_fns[i], fn, __ATOMIC_RELEASE);
	}
}

static void *real_end(int i)
{
	void *fn = __atomic_load_n(&end_fns[i], __ATOMIC_ACQUIRE);
	return fn ? fn : gmt_libc_find(end_names[i]);
}

/* The exec wrappers' call, or -1 with ENOSYS if libc has none. */
#define CALL_EXEC(i, type, ...)                                                                    \
	({                                                                                         \
		type real_ = (type)real_end(i);                                                    \
		real_ ? real_(__VA_ARGS__) : (errno = ENOSYS, -1);                                 \
	})

/* exit: the program's handlers, then our destructor, end the trace. Only
 * a second thread's exit racing the first needs us (gmt_exit_called). */
GMT_EXPORT __attribute__((noreturn)) void exit(int status)
{
	gmt_exit_status(GMT_EXIT_EXIT, status);
	gmt_exit_called();
	exit_fn real = (exit_fn)real_end(END_EXIT);
	if (real)
		real(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

GMT_EXPORT __attribute__((noreturn)) void _exit(int status)
{
	gmt_exit_status(GMT_EXIT__EXIT, status);
	gmt_finish_async(GMT_END__EXIT);
	exit_fn real = (exit_fn)real_end(END__EXIT);
	if (real)
		real(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

GMT_EXPORT __attribute__((noreturn)) void _Exit(int status)
{
	gmt_exit_status(GMT_EXIT__EXIT, status);
	gmt_finish_async(GMT_END__EXIT);
	exit_fn real = (exit_fn)real_end(END__EXIT_UPPER);
	if (real)
		real(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

/* The trace gets a trailer before the image goes, and nothing after it
 * while the exec is under way. If exec fails, tracing goes on and a later
 * trailer supersedes this one. */
GMT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	gmt_finish_async(GMT_END_EXEC);
	int rc = CALL_EXEC(END_EXECVE, execve_fn, path, argv, envp);
	gmt_exec_returned();
	return rc;
}

GMT_EXPORT int execv(const char *path, char *const argv[])
{
	gmt_finish_async(GMT_END_EXEC);
	int rc = CALL_EXEC(END_EXECV, execv_fn, path, argv);
	gmt_exec_returned();
	return rc;
}

GMT_EXPORT int execvp(const char *file, char *const argv[])
{
	gmt_finish_async(GMT_END_EXEC);
	int rc = CALL_EXEC(END_EXECVP, execv_fn, file, argv);
	gmt_exec_returned();
	return rc;
}

GMT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	gmt_finish_async(GMT_END_EXEC);
	int rc = CALL_EXEC(END_EXECVPE, execve_fn, file, argv, envp);
	gmt_exec_returned();
	return rc;
}

GMT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	gmt_finish_async(GMT_END_EXEC);
	int rc = CALL_EXEC(END_FEXECVE, fexecve_fn, fd, argv, envp);
	gmt_exec_returned();
	return rc;
}

/* execl and friends' argv, ending at the NULL: up to ARGS_ON_STACK on the
 * stack, a longer list in pages of its own (mmap is async-signal-safe, as
 * exec is), so no array sized by the caller lands on a thread's stack. */
enum { ARGS_ON_STACK = 64 };
struct exec_args {
	const char **v;
	size_t mapped; /* bytes of v when mapped, else 0 */
	const char *small[ARGS_ON_STACK];
};

static const char **exec_args_get(struct exec_args *a, size_t n)
{
	a->mapped = 0;
	a->v = a->small;
	if (n <= ARGS_ON_STACK)
		return a->v;
	void *m = mmap(NULL, n * sizeof(*a->v), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (m == MAP_FAILED)
		return a->v = NULL; /* errno: ENOMEM */
	a->mapped = n * sizeof(*a->v);
	return a->v = m;
}

/* An exec that returned: its rc, with the list unmapped and errno kept. */
static int exec_args_put(struct exec_args *a, int rc)
{
	int err = errno;
	if (a->mapped)
		munmap((void *)a->v, a->mapped);
	errno = err;
	return rc;
}

/* Leaves ap_ open for execle's envp; argv_out is NULL when the list could
 * not be mapped. */
#define COLLECT_ARGS(first, args, argv_out)                                                        \
	size_t argc_ = 1;                                                                          \
	va_list ap_;                                                                               \
	va_start(ap_, first);                                                                      \
	while (va_arg(ap_, const char *))                                                          \
		argc_++;                                                                           \
	va_end(ap_);                                                                               \
	struct exec_args args;                                                                     \
	const char **argv_out = exec_args_get(&args, argc_ + 1);                                   \
	va_start(ap_, first);                                                                      \
	for (size_t i_ = 0; argv_out && i_ <= argc_; i_++)                                         \
	argv_out[i_] = i_ ? va_arg(ap_, const char *) : first

GMT_EXPORT int execl(const char *path, const char *arg, ...)
{
	COLLECT_ARGS(arg, args, argv);
	va_end(ap_);
	if (!argv)
		return -1;
	return exec_args_put(&args, execv(path, (char *const *)argv));
}

GMT_EXPORT int execlp(const char *file, const char *arg, ...)
{
	COLLECT_ARGS(arg, args, argv);
	va_end(ap_);
	if (!argv)
		return -1;
	return exec_args_put(&args, execvp(file, (char *const *)argv));
}

GMT_EXPORT int execle(const char *path, const char *arg, ...)
{
	COLLECT_ARGS(arg, args, argv);
	char *const *envp = argv ? va_arg(ap_, char *const *) : NULL;
	va_end(ap_);
	if (!argv)
		return -1;
	return exec_args_put(&args, execve(path, (char *const *)argv, envp));
}
