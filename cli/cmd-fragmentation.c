/* gpumemtrace fragmentation: size histogram, address span against live bytes, free gaps, rounding waste. */
#include "cli.h"

int cmd_fragmentation(int argc, char **argv)
{
	cli_error(argv[0], "not implemented yet");
	return EXIT_USAGE;
}
