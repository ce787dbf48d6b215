/* Which threads make traced calls (preload/callers.c): one thread alone is the
 * sole caller, a second makes it MANY for good, for every thread, however
 * the joins race. A wrong answer here would let an allocation's stamp go
 * unfenced while another thread frees (tracer.h, gmt_stamp_after). */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "preload/tracer.h"

/* preload/notes.c's, which this test does not link: counts the notes. */
static int notes;
void gmt_note(int level, const char *text)
{
	(void)level;
	(void)text;
	__atomic_add_fetch(&notes, 1, __ATOMIC_RELAXED);
}

static void *join_and_report(void *arg)
{
	int *sole = arg;
	gmt_callers_join();
	*sole = gmt_sole_caller();
	return NULL;
}

static pthread_barrier_t barrier;

/* Joins with the others at once; once all have joined, none is sole. */
static void *join_racing(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&barrier);
	gmt_callers_join();
	pthread_barrier_wait(&barrier);
	return (void *)(intptr_t)gmt_sole_caller();
}

/* In a child, from a fresh state: n threads join at once. Exit 0 when the
 * end state is MANY, no thread is sole and one note said so. */
static int race_in_child(int n)
{
	pid_t pid = fork();
	if (pid == 0) {
		gmt_callers = GMT_CALLERS_NONE;
		notes = 0;
		pthread_t t[16];
		if (pthread_barrier_init(&barrier, NULL, (unsigned)n) != 0)
			_exit(3);
		for (int i = 0; i < n; i++)
			if (pthread_create(&t[i], NULL, join_racing, NULL) != 0)
				_exit(3); /* the others wait at the barrier: exit them */
		int sole = 0;
		for (int i = 0; i < n; i++) {
			void *r;
			pthread_join(t[i], &r);
			sole += r != NULL;
		}
		_exit(gmt_callers == GMT_CALLERS_MANY && sole == 0 && notes == 1 ? 0 : 1);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

int main(void)
{
	CHECK(!gmt_sole_caller(), "a thread that never called is the sole caller");
	gmt_callers_join();
	CHECK(gmt_sole_caller(), "the first caller is not the sole caller");
	uint64_t token = gmt_tls_caller;
	CHECK(token > GMT_CALLERS_NONE && token != GMT_CALLERS_MANY, "token %llu",
	      (unsigned long long)token);
	gmt_callers_join();
	CHECK(gmt_sole_caller() && gmt_tls_caller == token, "joining again changed the state");

	pthread_t t;
	int sole = -1;
	pthread_create(&t, NULL, join_and_report, &sole);
	pthread_join(t, NULL);
	CHECK(sole == 0, "the second caller thinks it is the sole caller");
	CHECK(!gmt_sole_caller(), "the first caller is still sole after a second joined");
	CHECK(gmt_callers == GMT_CALLERS_MANY, "not MANY after two callers");
	CHECK(notes == 1, "%d notes for one change to MANY", notes);

	/* A thread that joined alone and exited leaves its token: the next
	 * thread's join must not take it over. */
	pid_t pid = fork();
	if (pid == 0) {
		gmt_callers = GMT_CALLERS_NONE;
		int first = -1, second = -1;
		pthread_create(&t, NULL, join_and_report, &first);
		pthread_join(t, NULL);
		pthread_create(&t, NULL, join_and_report, &second);
		pthread_join(t, NULL);
		_exit(first == 1 && second == 0 && gmt_callers == GMT_CALLERS_MANY ? 0 : 1);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "a thread after an exited sole caller took its place");

	int bad = 0;
	for (int round = 0; round < 200; round++)
		bad += race_in_child(2 + round % 7) != 0;
	CHECK(bad == 0, "%d of 200 racing joins did not end MANY, with one note and none sole",
	      bad);

	printf("%s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
