/* dlopen, dlmopen and dlclose. dlopen and dlmopen: a library opened with RTLD_DEEPBIND, or into a
 * new dlmopen namespace, binds its own dlsym to libc's, so its CUDA lookups bypass our dlsym hook.
 * We cannot see those calls; we say so in the trace (a NOTE that `summary` prints), naming the
 * library. dlclose: a real function cached from an object it unloaded (a plugin's libcudart) must
 * not be called once the object is opened again elsewhere. */
#include <dlfcn.h>

#include "preload/hooks/hooks.h"
#include "common/log.h"
#include "preload/tracer.h"

typedef void *(*dlopen_fn)(const char *, int);
typedef void *(*dlmopen_fn)(Lmid_t, const char *, int);

static void note_bypass(const char *how, const char *file)
{
	if (!gmt_tracing())
		return;
	char text[240];
	gmt_format(text, sizeof text,
		   "%s opened with %s: its dlsym lookups of CUDA bypass the tracer, "
		   "allocations it makes through them are not recorded",
		   file ? file : "(main program)", how);
	gmt_note(1, text);
}

/* Both stay tail calls: libc finds the caller (for its RUNPATH, $ORIGIN and
 * namespace) from the return address, which must stay the caller's. */
GMT_EXPORT void *dlopen(const char *file, int mode)
{
	dlopen_fn real = (dlopen_fn)gmt_libc_next("dlopen");
	if (!real)
		return NULL;
	if (mode & RTLD_DEEPBIND)
		note_bypass("RTLD_DEEPBIND", file);
	return real(file, mode);
}

GMT_EXPORT void *dlmopen(Lmid_t lmid, const char *file, int mode)
{
	dlmopen_fn real = (dlmopen_fn)gmt_libc_next("dlmopen");
	if (!real)
		return NULL;
	if (lmid != LM_ID_BASE)
		note_bypass("dlmopen into a new namespace", file);
	else if (mode & RTLD_DEEPBIND)
		note_bypass("RTLD_DEEPBIND", file);
	return real(lmid, file, mode);
}

/* Rare (plugins, ctypes): the check runs only when an object was unloaded. */
GMT_EXPORT int dlclose(void *handle)
{
	unsigned long long before = gmt_loader_unloads();
	int r = gmt_libc_dlclose(handle);
	if (gmt_loader_unloads() != before)
		gmt_forget_unloaded();
	return r;
}
