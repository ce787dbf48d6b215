#include "cli.h"
int cmd_plot(int argc, char **argv)
{
	return 2;
}
