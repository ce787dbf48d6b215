/* gpumemtrace check: CI gate: peak, live-at-end and regression limits; exit 1 when one fails. */
#include "cli.h"

int cmd_check(int argc, char **argv)
{
	cli_error(argv[0], "not implemented yet");
	return EXIT_USAGE;
}
