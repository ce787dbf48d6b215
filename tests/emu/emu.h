/* What the framework emulators (tests/emu/emu-*.c) share: sizes, sleeps,
 * NVTX ranges through the injection a real NVTX v3 loader uses, lazily
 * loaded kernels, and the scenario dispatch.
 *
 * The emulators reproduce what each framework's allocator does at the
 * driver level, on the simulated CUDA, from the facts in
 * /work/shared/notes/frameworks.md (each .c cites its sections) and never
 * from what gpumemtrace's reports expect. Their traces and the true answers
 * about them are in tests/verdicts/ (README.md there). Each program prints
 * its own ground truth last ("EMU ..." lines): what the framework's
 * counters would say. */
#ifndef EMU_H
#define EMU_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim-cuda.h"

#define KiB (1024ull)
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

static inline size_t emu_round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* Time the GPU would spend: a real sleep, kept short so a run stays under
 * a second or two. */
static inline void emu_sleep_ms(double ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (time_t)(ms / 1000) * 1000) * 1e6)};
	nanosleep(&ts, NULL);
}

static inline int emu_env_on(const char *name)
{
	const char *v = getenv(name);
	return v && *v && strcmp(v, "0");
}

/* ---- NVTX: the v3 loader's injection (as tests/progs/nvtx-client.c) ----
 * Frameworks annotate with header-only NVTX3, which dlopens
 * NVTX_INJECTION64_PATH (`gpumemtrace run` sets it) and calls the slots the
 * injection fills. Without an injection the ranges cost nothing. */
typedef void (*emu_slot_fn)(void);
static emu_slot_fn emu_core[16];
static emu_slot_fn *emu_core_table[17];

static int emu_nvtx_module(int module, emu_slot_fn ***table, unsigned *count)
{
	if (module != 1)
		return 0;
	*table = emu_core_table;
	*count = 16;
	return 1;
}

static struct {
	size_t size;
	int (*get)(int, emu_slot_fn ***, unsigned *);
} emu_nvtx_callbacks = {sizeof emu_nvtx_callbacks, emu_nvtx_module};

static void emu_nvtx_version(uint32_t v)
{
	(void)v;
}

static struct {
	size_t size;
	uint32_t version, reserved;
	void (*set)(uint32_t);
} emu_nvtx_version_info = {sizeof emu_nvtx_version_info, 3, 0, emu_nvtx_version};

static const void *emu_nvtx_table(uint32_t id)
{
	return id == 1	 ? (const void *)&emu_nvtx_callbacks
	       : id == 3 ? (const void *)&emu_nvtx_version_info
			 : NULL;
}

static inline void emu_nvtx_init(void)
{
	for (int i = 0; i < 16; i++)
		emu_core_table[i] = &emu_core[i];
	const char *path = getenv("NVTX_INJECTION64_PATH");
	void *lib = path && *path ? dlopen(path, RTLD_LAZY) : NULL;
	int (*init)(const void *(*)(uint32_t)) =
	    lib ? (int (*)(const void *(*)(uint32_t)))dlsym(lib, "InitializeInjectionNvtx2") : NULL;
	if (!init || !init(emu_nvtx_table))
		memset(emu_core, 0, sizeof emu_core);
}

/* nvtxRangePushA (slot 9) and nvtxRangePop (slot 11): a stack per thread. */
static inline void emu_push(const char *name)
{
	if (emu_core[9])
		((int (*)(const char *))emu_core[9])(name);
}

static inline void emu_pop(void)
{
	if (emu_core[11])
		((int (*)(void))emu_core[11])();
}

/* ---- lazily loaded kernels (frameworks.md §5, "Lazy loading") ----
 * Under CUDA_MODULE_LOADING=LAZY (the default since CUDA 12.2) a module's
 * code is loaded on the first launch of one of its kernels: device memory
 * with no allocation call. emu_launch() launches a kernel of a module of
 * `module_bytes`, loading the module on first use. The current context must
 * be the driver's (the runtime makes it current on a thread's first call). */
struct emu_kernel {
	const char *name;
	size_t module_bytes;
	CUfunction fn;
};

static inline void emu_launch(struct emu_kernel *k)
{
	if (!k->fn) {
		char image[64];
		CUmodule mod;
		snprintf(image, sizeof image, "SIMMODULE %zu", k->module_bytes);
		if (cuModuleLoadData(&mod, image) != CUDA_SUCCESS ||
		    cuModuleGetFunction(&k->fn, mod, k->name) != CUDA_SUCCESS)
			return;
	}
	cuLaunchKernel(k->fn, 1, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL);
}

/* ---- the helper of `run --framework-counters` (EMU_HELPER=1) ----
 * What python/gpumemtrace/_counters/sitecustomize.py records when the
 * framework raises an out-of-memory error: a FWOOM record through the
 * library's gpumemtrace_framework_oom_v1 (include/gpumemtrace/format.h),
 * with the figures the helper reads then under the names it uses
 * (analysis/fwoom.c) and the framework's own message, in the form its
 * source writes it (/work/shared/notes/framework-view.md). Nothing without
 * EMU_HELPER, as a run without --framework-counters. */
static inline void emu_fwoom(unsigned how, const char *source, const char *type,
			     const char *const *names, const uint64_t *values, size_t n,
			     const char *message)
{
	typedef void (*fwoom_fn)(unsigned, const char *, const char *, int64_t, size_t,
				 const char *const *, const uint64_t *, const char *);
	if (!emu_env_on("EMU_HELPER"))
		return;
	fwoom_fn fn = (fwoom_fn)dlsym(RTLD_DEFAULT, "gpumemtrace_framework_oom_v1");
	if (fn)
		fn(how, source, type, 0, n, names, values, message);
}

/* c10's format_size: "N bytes" up to 1 KiB, else x.xx KiB, MiB, GiB. */
static inline const char *emu_format_size(char *buf, size_t len, size_t n)
{
	if (n <= 1024)
		snprintf(buf, len, "%zu bytes", n);
	else if (n <= MiB)
		snprintf(buf, len, "%.2f KiB", n / 1024.0);
	else if (n <= GiB)
		snprintf(buf, len, "%.2f MiB", n / (double)MiB);
	else
		snprintf(buf, len, "%.2f GiB", n / (double)GiB);
	return buf;
}

/* Python's "{:,}": 1,073,741,824. */
static inline const char *emu_commas(char *buf, size_t len, size_t n)
{
	char d[32];
	int k = snprintf(d, sizeof d, "%zu", n), o = 0;
	for (int i = 0; i < k && o + 2 < (int)len; i++) {
		if (i && (k - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = d[i];
	}
	buf[o] = '\0';
	return buf;
}

/* ---- scenarios ---- */
struct emu_scenario {
	const char *name;
	int (*run)(void);
	const char *what;
};

static inline int emu_main(int argc, char **argv, const struct emu_scenario *s, size_t n)
{
	if (argc == 2) {
		for (size_t i = 0; i < n; i++)
			if (!strcmp(argv[1], s[i].name)) {
				emu_nvtx_init();
				int rc = s[i].run();
				fflush(stdout);
				return rc;
			}
	}
	fprintf(stderr, "usage: %s SCENARIO\nscenarios:\n", argv[0]);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "  %-18s %s\n", s[i].name, s[i].what);
	return 2;
}

#endif
