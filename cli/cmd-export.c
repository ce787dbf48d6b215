#include "cli.h"
int cmd_export(int argc, char **argv)
{
	return 2;
}
