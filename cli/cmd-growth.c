/* gpumemtrace growth: how memory grew: every new high-water mark, chunk sizes, warm-up, leak slope. */
#include "cli.h"

int cmd_growth(int argc, char **argv)
{
	cli_error(argv[0], "not implemented yet");
	return EXIT_USAGE;
}
