/* Helpers for the test programs: each prints one line per CUDA call it makes
 * (the call's source text and its result), so a traced and an untraced run
 * can be diffed, and exits nonzero if any result differs from the expected.
 * Addresses are never printed: they are not deterministic. */
#ifndef PROGS_H
#define PROGS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim-cuda.h"

#define MiB (1024ull * 1024)

static int prog_failures;

/* CHECK(call, expected): runs call, prints "call = result", counts a miss. */
#define CHECK(call, want) check_((int)(call), (int)(want), #call)

static inline int check_(int got, int want, const char *what)
{
	printf("%s = %d\n", what, got);
	if (got != want) {
		printf("  UNEXPECTED: wanted %d\n", want);
		prog_failures++;
	}
	return got;
}

/* EXPECT(cond): a fact about results, printed and counted the same way. */
#define EXPECT(cond) expect_((cond) != 0, #cond)

static inline void expect_(int ok, const char *what)
{
	printf("%s: %s\n", what, ok ? "yes" : "NO");
	if (!ok)
		prog_failures++;
}

/* Families to run: none named means all. */
static inline int wanted(int argc, char **argv, const char *family)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], family) || !strcmp(argv[i], "all"))
			return 1;
	return 0;
}

/* Rejects a family name that is not in names[] (a typo would run nothing). */
static inline void check_families(int argc, char **argv, const char *const *names, size_t n)
{
	for (int i = 1; i < argc; i++) {
		int ok = !strcmp(argv[i], "all");
		for (size_t j = 0; j < n && !ok; j++)
			ok = !strcmp(argv[i], names[j]);
		if (!ok) {
			fprintf(stderr, "%s: unknown family '%s'\n", argv[0], argv[i]);
			exit(2);
		}
	}
}

static inline int prog_exit(const char *name)
{
	printf("%s: %s\n", name, prog_failures ? "FAILED" : "ok");
	return prog_failures ? 1 : 0;
}

#endif
