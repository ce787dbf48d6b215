/* libnextcheck.so: proves dlsym(RTLD_NEXT, ...) stays relative to its
 * caller under the tracer. RTLD_NEXT means "the next object after the one
 * this call is made from"; a dlsym hook that forwards the handle through an
 * ordinary call from its own library silently changes that meaning. The
 * program links libnextcheck.so and then libnextcheck2.so, both defining
 * nc_value(): the next definition after this library's is libnextcheck2's. */
#include <dlfcn.h>
#include <stddef.h>

int nc_value(void);
int nc_next_value(void);
int nc_missing_is_null(void);

int nc_value(void)
{
	return 1;
}

/* 2 when RTLD_NEXT found libnextcheck2.so's nc_value, 1 when it found ours
 * (the handle was resolved relative to the wrong object), -1 when nothing. */
int nc_next_value(void)
{
	int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "nc_value");
	return next ? next() : -1;
}

/* A name defined nowhere after us must still give NULL and a dlerror. */
int nc_missing_is_null(void)
{
	dlerror();
	void *p = dlsym(RTLD_NEXT, "nc_defined_nowhere");
	return p == NULL && dlerror() != NULL;
}
