/* libnextcheck2.so: the definition of nc_value() that comes after
 * libnextcheck.so's in the search order (see nextcheck.c). */
int nc_value(void);

int nc_value(void)
{
	return 2;
}
