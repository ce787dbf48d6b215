/* gpumemtrace top: allocation sites ranked by bytes at the peak, at the end, in total, or by calls. */
#include "cli.h"

int cmd_top(int argc, char **argv)
{
	cli_error(argv[0], "not implemented yet");
	return EXIT_USAGE;
}
