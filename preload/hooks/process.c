/* The ends of a process image that skip exit(): _exit and _Exit (how
 * os._exit and multiprocessing workers end) and exec. Each has the flush
 * thread write the trace and its trailer first. They are async-signal-safe
 * and signal handlers call them, so nothing here mallocs or locks. */
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/hooks/hooks.h"

typedef void (*exit_fn)(int);
typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

GMT_EXPORT __attribute__((noreturn)) void _exit(int status)
{
	gmt_finish_async(GMT_END__EXIT);
	exit_fn real = (exit_fn)gmt_libc_next("_exit");
	if (real)
		real(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

GMT_EXPORT __attribute__((noreturn)) void _Exit(int status)
{
	gmt_finish_async(GMT_END__EXIT);
	exit_fn real = (exit_fn)gmt_libc_next("_Exit");
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
	int rc = ((execve_fn)gmt_libc_next("execve"))(path, argv, envp);
	gmt_exec_returned();
	return rc;
}

GMT_EXPORT int execv(const char *path, char *const argv[])
{
	gmt_finish_async(GMT_END_EXEC);
	int rc = ((execv_fn)gmt_libc_next("execv"))(path, argv);
	gmt_exec_returned();
	return rc;
}

GMT_EXPORT int execvp(const char *file, char *const argv[])
{
	gmt_finish_async(GMT_END_EXEC);
	int rc = ((execv_fn)gmt_libc_next("execvp"))(file, argv);
	gmt_exec_returned();
	return rc;
}

GMT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	gmt_finish_async(GMT_END_EXEC);
	int rc = ((execve_fn)gmt_libc_next("execvpe"))(file, argv, envp);
	gmt_exec_returned();
	return rc;
}

GMT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	gmt_finish_async(GMT_END_EXEC);
	int rc = ((fexecve_fn)gmt_libc_next("fexecve"))(fd, argv, envp);
	gmt_exec_returned();
	return rc;
}

/* execl and friends: gather the variadic arguments into an argv, ending at
 * the NULL. Leaves ap_ open for execle's envp. */
#define COLLECT_ARGS(first, argv_out)                                                              \
	size_t argc_ = 1;                                                                          \
	va_list ap_;                                                                               \
	va_start(ap_, first);                                                                      \
	while (va_arg(ap_, const char *))                                                          \
		argc_++;                                                                           \
	va_end(ap_);                                                                               \
	const char *argv_out[argc_ + 1];                                                           \
	argv_out[0] = first;                                                                       \
	va_start(ap_, first);                                                                      \
	for (size_t i_ = 1; i_ <= argc_; i_++)                                                     \
	argv_out[i_] = va_arg(ap_, const char *)

GMT_EXPORT int execl(const char *path, const char *arg, ...)
{
	COLLECT_ARGS(arg, argv);
	va_end(ap_);
	return execv(path, (char *const *)argv);
}

GMT_EXPORT int execlp(const char *file, const char *arg, ...)
{
	COLLECT_ARGS(arg, argv);
	va_end(ap_);
	return execvp(file, (char *const *)argv);
}

GMT_EXPORT int execle(const char *path, const char *arg, ...)
{
	COLLECT_ARGS(arg, argv);
	char *const *envp = va_arg(ap_, char *const *);
	va_end(ap_);
	return execve(path, (char *const *)argv, envp);
}
