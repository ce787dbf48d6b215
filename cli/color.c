/* Colour for human output: only on a terminal, never with NO_COLOR set
 * (https://no-color.org). Decided once per stream. */
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"

/* Whether f gets colour: a terminal, and NO_COLOR unset or empty. */
static bool cli_colour(FILE *f)
{
	const char *no = getenv("NO_COLOR");
	if (no && *no)
		return false;
	return isatty(fileno(f));
}

const char *cli_paint(FILE *f, enum cli_colour c)
{
	static const char *const codes[] = {"\033[0m", "\033[1;32m", "\033[1;31m", "\033[1;33m",
					    "\033[1m"};
	return cli_colour(f) ? codes[c] : "";
}
