/* What the hook's pieces cost in tight loops on a machine (2026-11-23 H100
 * run, README.md): cc -O2 micro.c -o micro && ./micro */
#include <stdio.h>
#include <stdint.h>
#include <time.h>
#include <x86intrin.h>
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}
static volatile uint64_t sink;
static uint64_t counter;
int main(void)
{
	const int N = 20000000;
	double a, b;
	for (int r = 0; r < 3; r++) {
		a = now();
		for (int i = 0; i < N; i++)
			sink += __rdtsc();
		b = now();
		printf("rdtsc %.1f ns  ", (b - a) / N);
		a = now();
		for (int i = 0; i < N; i++) {
			_mm_lfence();
			sink += __rdtsc();
		}
		b = now();
		printf("lfence+rdtsc %.1f ns  ", (b - a) / N);
		a = now();
		for (int i = 0; i < N; i++) {
			unsigned x;
			sink += __rdtscp(&x);
		}
		b = now();
		printf("rdtscp %.1f ns  ", (b - a) / N);
		a = now();
		for (int i = 0; i < N / 4; i++) {
			struct timespec t;
			clock_gettime(CLOCK_MONOTONIC, &t);
			sink += t.tv_nsec;
		}
		b = now();
		printf("clock_gettime %.1f ns  ", (b - a) / (N / 4));
		a = now();
		for (int i = 0; i < N; i++)
			__atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
		b = now();
		printf("atomic add %.1f ns  ", (b - a) / N);
		a = now();
		for (int i = 0; i < N; i++)
			sink += i;
		b = now();
		printf("empty %.2f ns\n", (b - a) / N);
	}
	return 0;
}
