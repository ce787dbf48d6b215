/* gpumemtrace diff: two traces side by side: environment, peaks, sites added, removed, grown. */
#include "cli.h"

int cmd_diff(int argc, char **argv)
{
	cli_error(argv[0], "not implemented yet");
	return EXIT_USAGE;
}
