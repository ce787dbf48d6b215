/* The framework table's matcher (frameworks.h). */
#include <fnmatch.h>
#include <string.h>

#include "analysis/frameworks.h"
#include "analysis/trace.h"

bool fw_glob_any(const char *const *globs, const char *s)
{
	for (size_t i = 0; s && globs && globs[i]; i++)
		if (fnmatch(globs[i], s, 0) == 0)
			return true;
	return false;
}

enum gmt_fw_id fw_of_module(const char *library, const char *path)
{
	for (int id = 1; id < GMT_FW_COUNT; id++)
		if (gmt_frameworks[id].kind == GMT_FWK_CUDA &&
		    fw_glob_any(gmt_frameworks[id].modules, library))
			return (enum gmt_fw_id)id;
	for (int id = 1; id < GMT_FW_COUNT; id++) {
		const struct gmt_framework *w = &gmt_frameworks[id];
		if (w->kind != GMT_FWK_CUDA &&
		    (fw_glob_any(w->modules, library) || fw_glob_any(w->paths, path)))
			return (enum gmt_fw_id)id;
	}
	return GMT_FW_NONE;
}

enum gmt_fw_id fw_of_library(const char *library)
{
	for (int id = 1; id < GMT_FW_COUNT; id++)
		if (fw_glob_any(gmt_frameworks[id].modules, library) ||
		    fw_glob_any(gmt_frameworks[id].loose, library))
			return (enum gmt_fw_id)id;
	return GMT_FW_NONE;
}

bool fw_loaded(const struct trace *t, enum gmt_fw_id id, bool cuda)
{
	const struct gmt_framework *w = &gmt_frameworks[id];
	for (size_t i = 0; i < t->nmods; i++) {
		const struct trace_module *m = &t->mods[i];
		if ((m->fw == id || fw_glob_any(w->loose, m->library)) &&
		    (!cuda || fw_glob_any(w->cuda_modules, m->library)))
			return true;
	}
	return false;
}

enum gmt_fw_id fw_of_python(const char *python)
{
	for (int id = 1; python && id < GMT_FW_COUNT; id++)
		if (gmt_frameworks[id].python && strcmp(gmt_frameworks[id].python, python) == 0)
			return (enum gmt_fw_id)id;
	return GMT_FW_NONE;
}

/* The older name of a setting, or NULL. */
static const char *fw_older_name(const char *current)
{
	for (size_t i = 0; i < gmt_fw_nenv; i++)
		if (gmt_fw_env[i].current && strcmp(gmt_fw_env[i].current, current) == 0)
			return gmt_fw_env[i].name;
	return NULL;
}

static const char *env_value(const struct trace_env *env, size_t nenv, const char *key)
{
	for (size_t i = 0; key && i < nenv; i++)
		if (strcmp(env[i].key, key) == 0)
			return env[i].value;
	return NULL;
}

void fw_in_force_of(const struct trace_env *env, size_t nenv, const char *current,
		    struct fw_in_force *s)
{
	const char *old = fw_older_name(current);
	bool old_first = false;
	for (size_t i = 0; old && i < gmt_fw_nenv; i++)
		if (strcmp(gmt_fw_env[i].name, old) == 0)
			old_first = gmt_fw_env[i].read_first;
	const char *vc = env_value(env, nenv, current), *vo = env_value(env, nenv, old);
	*s = (struct fw_in_force){.name = current, .value = vc};
	if (vo && (!vc || old_first)) {
		*s = (struct fw_in_force){.name = old, .value = vo, .older = true};
		if (vc)
			s->ignored = current, s->ignored_value = vc;
	} else if (vo && vc) { /* both set, and neither wins */
		s->conflict = true;
		s->ignored = old, s->ignored_value = vo;
	}
}
