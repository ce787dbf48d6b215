/* CHECK(cond, printf-style message): counts a failure and says where. A
 * unit test ends with `return failures ? 1 : 0`. */
#ifndef GMT_UNIT_CHECK_H
#define GMT_UNIT_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                                \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#endif
