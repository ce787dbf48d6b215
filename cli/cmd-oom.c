/* gpumemtrace oom: every failed allocation: size, free memory then, who held it, a verdict. */
#include "cli.h"

int cmd_oom(int argc, char **argv)
{
	cli_error(argv[0], "not implemented yet");
	return EXIT_USAGE;
}
