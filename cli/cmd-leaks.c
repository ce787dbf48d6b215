/* gpumemtrace leaks: allocations still live at exit, grouped by stack. */
#include "cli.h"

int cmd_leaks(int argc, char **argv)
{
	cli_error(argv[0], "not implemented yet");
	return EXIT_USAGE;
}
