/* libstuckctor.so (t-life-stuck-loader): a library whose constructor does
 * not return for STUCK_SECONDS seconds (20 if unset), the loader's lock
 * held all that while by the thread that dlopened it. It first writes one
 * byte to the descriptor STUCK_FD names, so the program knows it is stuck. */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((constructor)) static void stuck(void)
{
	const char *fd = getenv("STUCK_FD"), *secs = getenv("STUCK_SECONDS");
	if (fd && write(atoi(fd), "s", 1) != 1)
		return;
	struct timespec ts = {secs ? atoi(secs) : 20, 0};
	while (nanosleep(&ts, &ts) != 0)
		;
}
