#include "cli.h"
int cmd_flamegraph(int argc, char **argv)
{
	return 2;
}
