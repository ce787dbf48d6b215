/* analysis/explain*.c: the framework and allocator mode recognized from
 * modules, environment and pattern; each finding's answer, figures and
 * advice on hand-made facts (the known answers are worked out in the
 * comments, from ../shared/notes/frameworks.md's rules); the comparison of
 * two runs; and the adapter on a built trace (a PyTorch-shaped retried OOM,
 * a request above the device, cache segments at the peak). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/counters.h"
#include "analysis/explain.h"
#include "check.h"
#include "trace-file.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static struct trace_env envs[8];
static struct ex_module mods[8];

static void facts(struct ex_facts *f, struct ex_dev *d, const char *const *libs,
		  const char *const *kv)
{
	memset(f, 0, sizeof(*f));
	memset(d, 0, sizeof(*d));
	f->path = "t.gmt";
	f->devs = d;
	f->ndevs = 1;
	f->mods = mods;
	for (; libs && *libs; libs++)
		mods[f->nmods++] = (struct ex_module){*libs, "", false};
	f->env = envs;
	for (; kv && *kv; kv += 2)
		envs[f->nenv++] = (struct trace_env){(char *)kv[0], (char *)kv[1]};
	d->name = "GPU";
	d->total = 80 * GiB;
	f->duration_ns = 10000000000ull;
}

static const struct ex_finding *find(const struct ex_findings *fs, const char *id)
{
	for (size_t i = 0; i < fs->n; i++)
		if (strcmp(fs->v[i].id, id) == 0)
			return &fs->v[i];
	return NULL;
}

static bool has(const char *s, const char *sub)
{
	return s && strstr(s, sub);
}

static bool ev_has(const struct ex_finding *x, const char *sub)
{
	for (size_t i = 0; x && i < x->nev; i++)
		if (strstr(x->ev[i].text, sub))
			return true;
	return false;
}

static void test_recognize(void)
{
	struct ex_facts f;
	struct ex_dev d;
	struct ex_recog r;
	static const char *const torch[] = {"libtorch_global_deps.so", "libc10_cuda.so",
					    "libtorch_cuda.so", NULL};
	static const char *const jax[] = {"libjax_common.so", "xla_cuda_plugin.so", NULL};
	static const char *const tf[] = {"xla_cuda_plugin.so", "libtensorflow_framework.so.2",
					 NULL};
	struct {
		const char *const *libs;
		const char *kv[5];
		enum ex_fw fw;
		enum ex_mode mode;
	} cases[] = {
	    {torch, {NULL}, FW_PYTORCH, MODE_PT_CACHING},
	    {torch,
	     {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", NULL},
	     FW_PYTORCH,
	     MODE_PT_EXPANDABLE},
	    {torch,
	     {"PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync", NULL},
	     FW_PYTORCH,
	     MODE_PT_ASYNC},
	    /* any value turns the cache off, and wins over the conf */
	    {torch,
	     {"PYTORCH_NO_CUDA_MEMORY_CACHING", "1", "PYTORCH_CUDA_ALLOC_CONF",
	      "expandable_segments:True"},
	     FW_PYTORCH,
	     MODE_PT_NOCACHE},
	    {jax, {NULL}, FW_JAX, MODE_BFC_PREALLOC},
	    {jax, {"XLA_PYTHON_CLIENT_PREALLOCATE", "false", NULL}, FW_JAX, MODE_BFC_GROWTH},
	    /* case-sensitive: FALSE still preallocates */
	    {jax, {"XLA_PYTHON_CLIENT_PREALLOCATE", "FALSE", NULL}, FW_JAX, MODE_BFC_PREALLOC},
	    {jax, {"XLA_PYTHON_CLIENT_ALLOCATOR", "platform", NULL}, FW_JAX, MODE_XLA_PLATFORM},
	    /* TF loads XLA's plugin too: its own library decides */
	    {tf, {NULL}, FW_TF, MODE_BFC_PREALLOC},
	    {tf, {"TF_FORCE_GPU_ALLOW_GROWTH", "true", NULL}, FW_TF, MODE_BFC_GROWTH},
	    {tf, {"TF_GPU_ALLOCATOR", "cuda_malloc_async", NULL}, FW_TF, MODE_TF_ASYNC},
	    {NULL, {NULL}, FW_NONE, MODE_DIRECT},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		facts(&f, &d, cases[i].libs, cases[i].kv);
		explain_recognize(&f, &r);
		CHECK(r.fw == cases[i].fw && r.mode == cases[i].mode,
		      "case %zu: framework %d mode %d (%s)", i, r.fw, r.mode, r.mode_why);
	}
	facts(&f, &d, torch, NULL);
	explain_recognize(&f, &r);
	CHECK(has(r.fw_module, "_cuda"), "the telling module: %s", r.fw_module);
	facts(&f, &d, jax, (const char *const[]){"XLA_CLIENT_MEM_FRACTION", ".5", NULL});
	explain_recognize(&f, &r);
	CHECK(r.fraction == 0.5, "fraction %g", r.fraction);
	facts(&f, &d, jax, NULL);
	explain_recognize(&f, &r);
	CHECK(r.fraction == 0.75, "default fraction %g", r.fraction);
	/* no framework's module: the allocation pattern. One first allocation
	 * of 75% of the device is JAX's; of the free memory less 2 GiB or less,
	 * TF's (the emulators' traces, tests/verdicts) */
	facts(&f, &d, NULL, NULL);
	d.biggest = d.regions[0] = 60 * GiB;
	d.nregions = 1;
	explain_recognize(&f, &r);
	CHECK(r.mode == MODE_BFC_PREALLOC && r.fw == FW_JAX && has(r.mode_why, "pattern"),
	      "JAX pattern: %d %s", r.mode, r.mode_why);
	d.biggest = d.regions[0] = 78 * GiB;
	explain_recognize(&f, &r);
	CHECK(r.mode == MODE_BFC_PREALLOC && r.fw == FW_TF, "TF pattern: %d %s", r.mode,
	      r.mode_why);
	/* a big request after segments is no preallocation (a 512 MiB tensor on 1 GiB) */
	facts(&f, &d, NULL, NULL);
	d.total = 1 * GiB;
	const uint64_t segs[] = {20 * MiB, 2 * MiB, 20 * MiB, 40 * MiB, 512 * MiB};
	memcpy(d.regions, segs, sizeof(segs));
	d.nregions = 5;
	d.biggest = 512 * MiB;
	explain_recognize(&f, &r);
	CHECK(r.fw == FW_PYTORCH && r.mode == MODE_PT_CACHING, "caching pattern: %d %d %s", r.fw,
	      r.mode, r.mode_why);
	d.fw_vmm = 5; /* NCCL's 2 MiB cuMemCreate pages are no cache */
	explain_recognize(&f, &r);
	CHECK(r.fw == FW_NONE && r.mode == MODE_DIRECT, "VMM pages: %d %d", r.fw, r.mode);
	/* a setting names the framework when no module does, if the
	 * allocations agree: BFC's regions in powers of two */
	facts(&f, &d, NULL, (const char *const[]){"TF_FORCE_GPU_ALLOW_GROWTH", "true", NULL});
	const uint64_t regions[] = {2 * MiB, 4 * MiB, 8 * MiB};
	memcpy(d.regions, regions, sizeof(regions));
	d.nregions = 3;
	explain_recognize(&f, &r);
	CHECK(r.fw == FW_TF && r.mode == MODE_BFC_GROWTH && has(r.mode_why, "ALLOW_GROWTH=true"),
	      "env: %d %d %s", r.fw, r.mode, r.mode_why);
	/* PYTORCH_CUDA_ALLOC_CONF exported in a shell does not make a plain
	 * program PyTorch (tests/golden/leak.gmt: cudaMalloc only) */
	facts(&f, &d, NULL,
	      (const char *const[]){"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", NULL});
	const uint64_t odd[] = {3 * MiB, 5 * MiB, 7 * MiB};
	memcpy(d.regions, odd, sizeof(odd));
	d.nregions = 3;
	d.fw_allocs = 3;
	explain_recognize(&f, &r);
	CHECK(r.fw == FW_NONE && r.mode == MODE_DIRECT, "a stray setting: %d %d %s", r.fw, r.mode,
	      r.mode_why);
}

static void test_helpers(void)
{
	/* JAX with PREALLOCATE=false on the H100 (docs/validation): 2, 8, 8, 32, 32, 64, 128 MiB */
	const uint64_t bfc[] = {2 * MiB, 8 * MiB, 8 * MiB, 32 * MiB, 32 * MiB, 64 * MiB, 128 * MiB};
	const uint64_t same[] = {20 * MiB, 20 * MiB, 20 * MiB, 20 * MiB};
	const uint64_t down[] = {2 * MiB, 64 * MiB, 32 * MiB};
	const uint64_t odd[] = {3 * MiB, 24 * MiB, 36 * MiB, 100 * MiB};
	CHECK(explain_doubling(bfc, 7), "BFC regions double");
	CHECK(!explain_doubling(same, 4), "caching segments of one size do not");
	CHECK(!explain_doubling(down, 3), "shrinking sizes do not");
	CHECK(!explain_doubling(odd, 4), "sizes that are not powers of two do not");
	CHECK(!explain_doubling(bfc, 2), "two regions are too few");
	CHECK(strcmp(explain_lib_class("libnccl.so.2"), "NCCL") == 0, "nccl");
	CHECK(strcmp(explain_lib_class("libcublasLt.so.13"), "cuBLAS") == 0, "cublas");
	CHECK(strcmp(explain_lib_class("libcudnn_graph.so.9"), "cuDNN") == 0, "cudnn");
	CHECK(strcmp(explain_lib_class("libc10_cuda.so"), "framework") == 0, "c10");
	CHECK(strcmp(explain_lib_class("xla_cuda_plugin.so"), "framework") == 0, "xla");
	CHECK(strcmp(explain_lib_class("a.out"), "other") == 0, "program");
}

/* torch-async.837.gmt's figures at its end (docs/validation/2026-11-22-h100):
 * nvidia-smi 2.31 GiB = 193 MiB traced (65 MiB pool, 128 MiB cuBLAS) + 518
 * MiB context + 1.61 GiB the pool's reserve. */
static void test_smi_and_pool(void)
{
	struct ex_facts f;
	struct ex_dev d;
	struct ex_recog r;
	struct ex_findings out;
	static const char *const torch[] = {"libc10_cuda.so", NULL};
	facts(&f, &d, torch,
	      (const char *const[]){"PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync", NULL});
	d.peak = 982 * MiB;
	d.end = 193 * MiB;
	d.async_peak = 854 * MiB;
	d.async_end = d.smi_async = 65 * MiB;
	d.smi = true;
	d.smi_process = true;
	d.smi_bytes = 2365 * MiB;
	d.smi_traced = 193 * MiB;
	d.contexts = 518 * MiB;
	d.unexplained = (int64_t)(2365 - 193 - 518) * (int64_t)MiB; /* 1654 MiB */
	d.route_key = "pool_reserve";
	d.route_text = "the pool's reserve";
	/* nvidia-smi was read at the end only: the end figures are the same */
	d.smi_end = true;
	d.end_smi_bytes = d.smi_bytes;
	d.end_smi_traced = d.smi_traced;
	d.end_smi_async = d.smi_async;
	d.end_contexts = d.contexts;
	d.end_unexplained = d.unexplained;
	d.libs[0] = (struct ex_lib){"libc10_cuda.so", 65 * MiB};
	d.libs[1] = (struct ex_lib){"libcublas.so.13", 128 * MiB};
	d.nlibs = 2;
	d.verdict = "no-leak";
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	const struct ex_finding *s = find(&out, "smi-breakdown"), *p = find(&out, "pool-reserve");
	CHECK(s && s->bytes == 2365 * MiB, "smi-breakdown: %" PRIu64, s ? s->bytes : 0);
	CHECK(s && has(s->answer, "2.31 GiB at the end") && has(s->answer, "held 65.0 MiB") &&
		  has(s->answer, "other libraries 128 MiB") && has(s->answer, "contexts 518 MiB") &&
		  has(s->answer, "1.62 GiB is unexplained"),
	      "smi answer: %s", s ? s->answer : "");
	CHECK(s && ev_has(s, "cuBLAS: 128 MiB") && has(s->change, "pool-reserve") &&
		  has(s->change, "torch.cuda.memory_reserved()"),
	      "smi evidence and change: %s", s ? s->change : "");
	CHECK(s && strcmp(s->ev[0].cmd, "accounting") == 0, "the command that shows more");
	CHECK(p && p->bytes == 1654 * MiB &&
		  has(p->answer, "between 789 MiB and 1.62 GiB beyond the 65.0 MiB") &&
		  has(p->answer, "release threshold to the maximum") &&
		  has(p->change, "torch.cuda.empty_cache()") &&
		  has(p->change, "cudaMemPoolAttrReleaseThreshold"),
	      "pool-reserve: %s", p ? p->answer : "");
	/* largest first: nvidia-smi's figure, then the reserve, then the warm-up */
	CHECK(out.n == 3 && out.v[0].bytes >= out.v[1].bytes && strcmp(out.v[2].id, "warm-up") == 0,
	      "order: %zu findings", out.n);
	explain_findings_free(&out);

	/* the largest part outside the framework names its setting: cuBLAS */
	d.unexplained = 10 * MiB;
	d.route_key = "module_code";
	d.contexts = 100 * MiB;
	explain_findings(&f, &r, &out);
	s = find(&out, "smi-breakdown");
	CHECK(s && has(s->change, "CUBLAS_WORKSPACE_CONFIG"), "cuBLAS advice: %s",
	      s ? s->change : "");
	CHECK(!find(&out, "pool-reserve") || find(&out, "pool-reserve")->bytes == 854 * MiB,
	      "an unmeasured reserve counts the pool's peak");
	explain_findings_free(&out);
}

static void test_prealloc_and_growth(void)
{
	struct ex_facts f;
	struct ex_dev d;
	struct ex_recog r;
	struct ex_findings out;
	static const char *const jax[] = {"xla_cuda_plugin.so", NULL};
	/* jax-default.1043.gmt: 59.4 GiB of 79.2 GiB in one cuMemCreate = 75% */
	facts(&f, &d, jax, NULL);
	d.total = 81079 * MiB;
	d.biggest = d.peak = 60809 * MiB;
	d.biggest_lib = "xla_cuda_plugin.so";
	d.verdict = "no-leak";
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	const struct ex_finding *p = find(&out, "preallocation");
	CHECK(p && p->bytes == 60809 * MiB && has(p->answer, "JAX took 59.4 GiB, 75% of") &&
		  has(p->change, "XLA_PYTHON_CLIENT_PREALLOCATE=false") &&
		  has(p->change, "XLA_PYTHON_CLIENT_MEM_FRACTION") && p->needs_counters &&
		  ev_has(p, "run with `gpumemtrace run --framework-counters` to see what the "
			    "program really used"),
	      "preallocation: %s", p ? p->answer : "");
	CHECK(!find(&out, "bfc-growth"), "one region is no growth");
	explain_findings_free(&out);

	/* TF with allow_growth: 2, 4, 8... 64 MiB regions, none freed */
	static const char *const tf[] = {"libtensorflow_framework.so.2", NULL};
	facts(&f, &d, tf, (const char *const[]){"TF_FORCE_GPU_ALLOW_GROWTH", "true", NULL});
	for (int i = 0; i < 6; i++)
		d.regions[d.nregions++] = (2 * MiB) << i; /* 2+4+8+16+32+64 = 126 MiB */
	d.peak = d.end = 126 * MiB;
	d.biggest = 64 * MiB;
	d.verdict = "no-leak";
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	const struct ex_finding *g = find(&out, "bfc-growth");
	CHECK(g && g->bytes == 126 * MiB &&
		  has(g->answer, "6 regions, from 2.00 MiB up to 64.0 MiB") &&
		  has(g->answer, "returned none") && has(g->change, "memory_limit") &&
		  ev_has(g, "2.00 MiB, 4.00 MiB, 8.00 MiB"),
	      "bfc-growth: %s", g ? g->answer : "");
	CHECK(!find(&out, "preallocation"), "growth is no preallocation");
	explain_findings_free(&out);
}

static void test_torch_cache_and_verdicts(void)
{
	struct ex_facts f;
	struct ex_dev d;
	struct ex_recog r;
	struct ex_findings out;
	static const char *const torch[] = {"libc10_cuda.so", NULL};
	facts(&f, &d, torch, NULL);
	d.peak = 500 * MiB;
	d.seg_small = 3; /* 6 MiB */
	d.seg_mid = 4;	 /* 80 MiB */
	d.seg_large = 2;
	d.seg_bytes = 300 * MiB;
	d.fw_allocs = 12;
	d.fw_frees = 3;
	d.verdict = "leak";
	d.has_rate_step = true;
	d.rate_step = 1 * MiB;
	d.rate_s = 10 * MiB;
	snprintf(d.leak_site, sizeof(d.leak_site), "train (train.py:42)");
	/* a retried OOM (cudaMalloc fails, cudaFree of the cache, retry) */
	f.retried = 1;
	f.retry_ns = 3000000;
	f.ooms[f.nooms++] = (struct ex_oom){.device = 0,
					    .size = 20 * MiB,
					    .api = "cudaMalloc",
					    .kase = "recovered-by-retry",
					    .freed = 40 * MiB};
	f.ooms[f.nooms++] = (struct ex_oom){.device = 0,
					    .size = 1ull << 50,
					    .api = "cudaMalloc",
					    .kase = "exceeds-device-total",
					    .site = "main"};
	f.ooms_total = 2;
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	const struct ex_finding *c = find(&out, "torch-cache");
	CHECK(c && c->bytes == 300 * MiB && has(c->answer, "300 MiB in 9 segments") &&
		  ev_has(c, "3 of 2 MiB") && ev_has(c, "4 of 20 MiB") && ev_has(c, "retried OOM") &&
		  has(c->change, "empty_cache()") && has(c->change, "expandable_segments:True") &&
		  has(c->change, "max_split_size_mb"),
	      "torch-cache: %s", c ? c->answer : "");
	/* 10 MiB/s over 10 s = 100 MiB: the leak's weight */
	const struct ex_finding *l = find(&out, "leak");
	CHECK(l && l->bytes == 100 * MiB && has(l->answer, "1.00 MiB per iteration") &&
		  has(l->answer, "+10.0 MiB/s") && has(l->answer, "train (train.py:42)"),
	      "leak: %s (%" PRIu64 ")", l ? l->answer : "", l ? l->bytes : 0);
	const struct ex_finding *o = find(&out, "oom-retried");
	CHECK(o && has(o->answer, "1 OOM was recovered") && has(o->answer, "3.0 ms") &&
		  has(o->change, "num_alloc_retries"),
	      "oom-retried: %s", o ? o->answer : "");
	const struct ex_finding *e = find(&out, "oom-exceeds-device-total");
	CHECK(e && out.v[0].bytes == 1ull << 50 && e == &out.v[0] &&
		  has(e->change, "No setting makes it fit"),
	      "the 1 PiB request first");
	CHECK(!find(&out, "oom-this-process"), "no other case");
	explain_findings_free(&out);

	/* expandable segments: pages, and the advice says it is on */
	facts(&f, &d, torch,
	      (const char *const[]){"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", NULL});
	d.seg_mid = 5;
	d.seg_bytes = 100 * MiB;
	d.verdict = "undetermined";
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	c = find(&out, "torch-cache");
	CHECK(c && has(c->answer, "5 mapped pages") && has(c->change, "Expandable segments are on"),
	      "expandable: %s", c ? c->answer : "");
	CHECK(!find(&out, "growth-undetermined"), "no growth finding without traced bytes");
	explain_findings_free(&out);
}

/* the case oom cannot name without a reading, and the OOMs no call shows */
static void test_oom_unknown_and_blind(void)
{
	struct ex_facts f;
	struct ex_dev d;
	struct ex_recog r;
	struct ex_findings out;
	facts(&f, &d, NULL, NULL);
	f.ooms[f.nooms++] = (struct ex_oom){
	    .device = 0, .size = 64 * MiB, .api = "cuMemAlloc_v2", .kase = "unknown"};
	f.ooms[f.nooms++] = (struct ex_oom){
	    .device = 0, .size = 32 * MiB, .api = "cuMemAlloc_v2", .kase = "unknown"};
	snprintf(f.blind[f.nblind++], sizeof(f.blind[0]), "CUPY_GPU_MEMORY_LIMIT=1073741824");
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	const struct ex_finding *u = find(&out, "oom-unknown"), *b = find(&out, "oom-invisible");
	CHECK(u && u->bytes == 64 * MiB && has(u->answer, "(and 1 more like it)") &&
		  has(u->change, "GPUMEMTRACE_SAMPLE_MS"),
	      "oom-unknown: %s", u ? u->answer : "");
	CHECK(b && ev_has(b, "CUPY_GPU_MEMORY_LIMIT"), "oom-invisible");
	explain_findings_free(&out);
}

static void test_compare(void)
{
	struct ex_facts a, b;
	struct ex_dev da, db;
	struct ex_recog ra, rb;
	struct ex_findings out;
	static struct ex_module ma[2], mb[2];
	static struct trace_env ea[1], eb[1];
	static const char *const jax[] = {"xla_cuda_plugin.so", NULL};
	facts(&a, &da, jax, NULL);
	memcpy(ma, mods, sizeof(ma));
	a.mods = ma;
	a.env = ea;
	facts(&b, &db, jax, NULL);
	/* B: an H200's 139 GiB, 75% of it; another driver and a bigger context;
	 * PREALLOCATE differs; the plugin is another build */
	da.total = 80 * GiB;
	da.biggest = da.peak = 60 * GiB;
	da.contexts = 518 * MiB;
	da.driver_version = 12080;
	db.total = 140 * GiB;
	db.biggest = db.peak = 105 * GiB;
	db.contexts = 600 * MiB;
	db.driver_version = 13000;
	mb[0] = (struct ex_module){"xla_cuda_plugin.so", "aaaa", false};
	strcpy(ma[0].build_id, "bbbb");
	b.mods = mb;
	b.nmods = 1;
	eb[0] = (struct trace_env){"XLA_PYTHON_CLIENT_MEM_FRACTION", ".75"};
	b.env = eb;
	b.nenv = 1;
	explain_recognize(&a, &ra);
	explain_recognize(&b, &rb);
	explain_compare(&a, &ra, &b, &rb, &out);
	const struct ex_finding *p = find(&out, "compare-peak"), *g = find(&out, "compare-gpu"),
				*dr = find(&out, "compare-driver"), *e = find(&out, "compare-env"),
				*lb = find(&out, "compare-libs");
	CHECK(p && p->bytes == 45 * GiB && has(p->answer, "B needed 45.0 GiB more"), "peak: %s",
	      p ? p->answer : "");
	CHECK(g && g->bytes == 45 * GiB && has(g->answer, "a preallocation is a fraction"),
	      "gpu: %s", g ? g->answer : "");
	CHECK(dr && dr->bytes == 82 * MiB && has(dr->answer, "the drivers differ") &&
		  ev_has(dr, "A 12.8, B 13.0"),
	      "driver: %s", dr ? dr->answer : "");
	CHECK(e && ev_has(e, "XLA_PYTHON_CLIENT_MEM_FRACTION: A unset, B .75"), "env");
	CHECK(lb && ev_has(lb, "another build"), "libs");
	explain_findings_free(&out);
}

/* The adapter on a trace shaped like PyTorch's OOM retry (frameworks.md
 * 1.4): segments from libc10_cuda.so, a failed 20 MiB cudaMalloc, the
 * cache's segments freed, the same size retried with success; then a 1 PiB
 * request on a 1 GiB device. */
static void test_adapter(void)
{
	struct tb *b = tb_new(NULL);
	tb_module(b, 1, 0, 0x10000, 0x20000, "/opt/torch/lib/libc10_cuda.so", NULL, 0);
	tb_module(b, 2, 0, 0x400000, 0x500000, "/work/app", NULL, 0);
	tb_device(b, 0, "GPU 0", NULL, 0, 1 * GiB, 9, 0, 12080);
	const uint64_t parents[] = {0, 0}, ips[] = {0x10010, 0x400100};
	tb_stack(b, 2, parents, ips);
	tb_events_begin(b, 1, 1000);
	uint64_t t = 1000;
	struct tb_event e = {.api = GMT_API_cudaMalloc, .device = 0, .stack_id = 1};
#define EV(api_, ptr_, size_, res_)                                                                \
	do {                                                                                       \
		e.time_ns = (t += 1000);                                                           \
		e.api = (api_);                                                                    \
		e.ptr = (ptr_);                                                                    \
		e.size = (size_);                                                                  \
		e.result = (res_);                                                                 \
		tb_event(b, &e);                                                                   \
	} while (0)
	EV(GMT_API_cudaMalloc, 0x1000000, 2 * MiB, 0);
	EV(GMT_API_cudaMalloc, 0x2000000, 20 * MiB, 0);
	EV(GMT_API_cudaMalloc, 0x4000000, 20 * MiB, 0);
	EV(GMT_API_cudaMalloc, 0x6000000, 100 * MiB, 0); /* peak: 142 MiB, 4 segments */
	EV(GMT_API_cudaMalloc, 0, 20 * MiB, 2);		 /* fails */
	EV(GMT_API_cudaFree, 0x4000000, 0, 0);		 /* the cache emptied: 120 MiB */
	EV(GMT_API_cudaFree, 0x6000000, 0, 0);
	EV(GMT_API_cudaMalloc, 0x8000000, 20 * MiB, 0); /* the retry */
	e.stack_id = 2;
	EV(GMT_API_cudaMalloc, 0, 1ull << 50, 2); /* 1 PiB on a 1 GiB device */
	tb_events_end(b);
	/* torch.cuda.memory_stats() readings: an OOM observer's at 3000 with no
	 * failing driver call before it (unseen), one before the peak (5000)
	 * and one in its plateau (5000 to the free at 7000: 122 < 95% of 142),
	 * the observer's after the 1 PiB failure, and the last at exit */
	static const char *const cn[] = {
	    "allocated_bytes.all.current", "reserved_bytes.all.current",
	    "inactive_split_bytes.all.current", "num_alloc_retries", "num_ooms"};
	const struct {
		uint64_t t, why, v[5];
	} rd[] = {{3000, GMT_COUNTERS_WHY_OOM, {10 * MiB, 22 * MiB, 0, 0, 1}},
		  {4500, GMT_COUNTERS_WHY_PERIODIC, {100 * MiB, 142 * MiB, 12 * MiB, 0, 1}},
		  {5500, GMT_COUNTERS_WHY_PERIODIC, {130 * MiB, 142 * MiB, 12 * MiB, 0, 1}},
		  {10500, GMT_COUNTERS_WHY_OOM, {50 * MiB, 120 * MiB, 10 * MiB, 3, 2}},
		  {11000, GMT_COUNTERS_WHY_END, {20 * MiB, 120 * MiB, 0, 3, 2}}};
	for (size_t i = 0; i < 5; i++)
		tb_counters(b, 1, rd[i].t, rd[i].why, "torch", "cuda:0", 0, 5, cn, rd[i].v);
	tb_trailer(b, t + 1000, 9, 0, 2, GMT_END_EXIT);
	const char *path = trace_file(b, "explain.gmt");
	tb_free(b);
	struct trace tr;
	CHECK(trace_open(&tr, "explain", path) == -1, "open");
	struct ex_facts f;
	int x = explain_facts(&tr, false, 0, &f);
	CHECK(x == -1 && f.ndevs == 1, "facts: %d, %zu devices", x, f.ndevs);
	const struct ex_dev *d = &f.devs[0];
	CHECK(d->peak == 142 * MiB && d->seg_small == 1 && d->seg_mid == 2 && d->seg_large == 1 &&
		  d->seg_bytes == 142 * MiB,
	      "segments at the peak: %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64, d->seg_small,
	      d->seg_mid, d->seg_large, d->seg_bytes);
	CHECK(d->fw_allocs == 5 && d->fw_frees == 2 && d->nregions == 5 && d->total == 1 * GiB,
	      "allocs %" PRIu64 " frees %" PRIu64 " regions %zu", d->fw_allocs, d->fw_frees,
	      d->nregions);
	CHECK(f.ooms_total == 2 && f.nooms == 2 && f.retried == 1 && f.retry_ns == 3000,
	      "ooms %" PRIu64 " retried %" PRIu64 " in %" PRIu64 " ns", f.ooms_total, f.retried,
	      f.retry_ns);
	CHECK(f.nooms == 2 && strcmp(f.ooms[0].kase, "recovered-by-retry") == 0 &&
		  f.ooms[0].freed == 120 * MiB &&
		  strcmp(f.ooms[1].kase, "exceeds-device-total") == 0,
	      "cases: %s, %s", f.nooms ? f.ooms[0].kase : "", f.nooms > 1 ? f.ooms[1].kase : "");
	/* the counters: the reading at 5500 (in the plateau) speaks for the peak, 11000 for the
	 * end; the 10500 one for the 1 PiB failure (not for the retried one);
	 * 3 retries less 2 OOMs raised: 1 recovered */
	const struct ex_counters *c = &d->counters;
	CHECK(c->present && c->allocated == 130 * MiB && c->reserved == 142 * MiB &&
		  c->inactive_split == 12 * MiB && c->end_allocated == 20 * MiB &&
		  c->end_reserved == 120 * MiB && c->alloc_retries == 3 && c->ooms == 2 &&
		  c->readings == 5,
	      "counters at the peak %" PRIu64 "/%" PRIu64 ", end %" PRIu64 "/%" PRIu64,
	      c->allocated, c->reserved, c->end_allocated, c->end_reserved);
	CHECK(f.counter_retries == 1 && f.ooms_unseen == 1, "retries %" PRIu64 ", unseen %" PRIu64,
	      f.counter_retries, f.ooms_unseen);
	CHECK(f.nooms == 2 && !f.ooms[0].counters && f.ooms[1].counters &&
		  f.ooms[1].c_allocated == 50 * MiB && f.ooms[1].c_reserved == 120 * MiB &&
		  f.ooms[1].c_inactive_split == 10 * MiB,
	      "the OOM's reading");
	struct ex_recog r;
	explain_recognize(&f, &r);
	CHECK(r.fw == FW_PYTORCH && r.mode == MODE_PT_CACHING, "recognized %s", r.fw_name);
	explain_facts_free(&f);
	trace_finish(&tr);
	trace_close(&tr);
}

/* What the other reports say of a mode: leaks' note, fragmentation's
 * sentence, oom's next step. */
static void test_mode_texts(void)
{
	char b[600];
	struct ex_recog r = {.fw = FW_PYTORCH, .fw_name = "PyTorch", .mode = MODE_PT_CACHING};
	CHECK(explain_held_by(&r, b, sizeof(b)) &&
		  strcmp(b, "PyTorch's caching allocator's segments") == 0,
	      "held by: %s", b);
	CHECK(explain_oom_next(&r, b, sizeof(b)) && strstr(b, "expandable_segments:True") &&
		  strstr(b, "max_split_size_mb") && strstr(b, "gpumemtrace fragmentation"),
	      "oom next: %s", b);
	r.mode = MODE_PT_ASYNC;
	CHECK(!explain_oom_next(&r, b, sizeof(b)), "async: no cache advice");
	r = (struct ex_recog){.fw = FW_JAX, .fw_name = "JAX", .mode = MODE_BFC_PREALLOC};
	CHECK(explain_held_by(&r, b, sizeof(b)) && strcmp(b, "JAX's preallocated pool") == 0,
	      "jax: %s", b);
	r = (struct ex_recog){.fw = FW_PYTORCH, .fw_name = "PyTorch", .mode = MODE_PT_NOCACHE};
	CHECK(!explain_held_by(&r, b, sizeof(b)), "no cache: nothing held");
	r.mode = MODE_DIRECT;
	CHECK(!explain_held_by(&r, b, sizeof(b)), "direct: nothing held");
}

/* A PyTorch reading: allocated and reserved at the peak and at the end. */
static void torch_counters(struct ex_dev *d, uint64_t alloc, uint64_t reserved, uint64_t split,
			   uint64_t end_alloc, uint64_t end_reserved)
{
	d->counters = (struct ex_counters){.present = true,
					   .source = "torch",
					   .api = "torch.cuda.memory_stats()",
					   .has = CNT_ALLOCATED | CNT_RESERVED |
						  CNT_INACTIVE_SPLIT | CNT_PEAK_ALLOCATED |
						  CNT_PEAK_RESERVED | CNT_RETRIES | CNT_OOMS,
					   .allocated = alloc,
					   .reserved = reserved,
					   .inactive_split = split,
					   .end_allocated = end_alloc,
					   .end_reserved = end_reserved,
					   .peak_allocated = alloc,
					   .peak_reserved = reserved,
					   .readings = 2};
}

static void test_counters_torch(void)
{
	struct ex_facts f;
	struct ex_dev d;
	struct ex_recog r;
	struct ex_findings out;
	static const char *const torch[] = {"libc10_cuda.so", NULL};
	/* 1 GiB of segments at the peak, nvidia-smi 1.5 GiB then; tensors 600
	 * MiB: 424 MiB free in the cache, 300 MiB of it in split segments.
	 * 4 x 300 >= 1024: fragmentation, the advice says so first. */
	facts(&f, &d, torch, NULL);
	d.seg_mid = 1;
	d.seg_large = 1;
	d.seg_bytes = d.peak = 1 * GiB;
	d.smi = d.smi_at_peak = true;
	d.smi_bytes = 1536 * MiB;
	d.smi_traced = 1 * GiB;
	d.contexts = 512 * MiB;
	d.libs[d.nlibs++] = (struct ex_lib){"libc10_cuda.so", 1 * GiB};
	d.verdict = "no-leak";
	torch_counters(&d, 600 * MiB, 1 * GiB, 300 * MiB, 100 * MiB, 1 * GiB);
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	const struct ex_finding *c = find(&out, "torch-cache"), *s = find(&out, "smi-breakdown");
	CHECK(c && !c->needs_counters && has(c->answer, "tensors used 600 MiB of it") &&
		  ev_has(c, "424 MiB free in the cache, 300 MiB of it inactive in split") &&
		  ev_has(c, "): tensors 100 MiB of 1.00 GiB reserved, 924 MiB free") &&
		  has(c->change, "Here 300 MiB of the 1.00 GiB cache sat in split segments at the "
				 "peak (29%)"),
	      "torch-cache with counters: %s | %s", c ? c->answer : "", c ? c->change : "");
	CHECK(s && !s->needs_counters &&
		  has(s->answer, "PyTorch's cache held 1.00 GiB (tensors 600 MiB, free in its "
				 "cache 424 MiB)"),
	      "smi-breakdown with counters: %s", s ? s->answer : "");
	explain_findings_free(&out);

	/* little split (100 MiB), but at the end 924 of 1024 MiB hold no
	 * tensor (>= half): empty_cache() is the advice */
	torch_counters(&d, 600 * MiB, 1 * GiB, 100 * MiB, 100 * MiB, 1 * GiB);
	explain_findings(&f, &r, &out);
	c = find(&out, "torch-cache");
	CHECK(c && has(c->change, "Here 924 MiB of the 1.00 GiB cache held no tensor at the end"),
	      "torch-cache, free at the end: %s", c ? c->change : "");
	explain_findings_free(&out);

	/* without counters: each finding says how to get them */
	d.counters = (struct ex_counters){0};
	explain_findings(&f, &r, &out);
	c = find(&out, "torch-cache");
	s = find(&out, "smi-breakdown");
	CHECK(c && c->needs_counters && s && s->needs_counters &&
		  ev_has(c, "how much of the cache tensors use") &&
		  has(c->answer, "tensors use part of it") && !has(s->answer, "tensors 600"),
	      "without counters: the note");
	/* how to get them is said whole once, in the first finding that needs
	 * them; the later ones name what they would add */
	int whole = 0, also = 0;
	for (size_t i = 0; i < out.n; i++)
		for (size_t k = 0; k < out.v[i].nev; k++) {
			whole += has(out.v[i].ev[k].text, "run with `gpumemtrace run "
							  "--framework-counters` to see");
			also +=
			    has(out.v[i].ev[k].text, "(--framework-counters, above) would also");
		}
	CHECK(whole == 1 && also >= 1, "the counters' hint: %d whole, %d short", whole, also);
	explain_findings_free(&out);

	/* no framework library loaded (a stand-in, a static build): the
	 * counters' source names the framework */
	facts(&f, &d, NULL, NULL);
	explain_recognize(&f, &r);
	CHECK(r.fw == FW_NONE, "nothing names a framework");
	torch_counters(&d, MiB, MiB, 0, MiB, MiB);
	explain_recognize(&f, &r);
	CHECK(r.fw == FW_PYTORCH && r.mode == MODE_PT_CACHING, "from the counters: %s", r.fw_name);
}

static void test_counters_oom(void)
{
	struct ex_facts f;
	struct ex_dev d;
	struct ex_recog r;
	struct ex_findings out;
	static const char *const torch[] = {"libc10_cuda.so", NULL};
	/* the OOM observer's reading: 9 GiB of tensors in 10 GiB reserved, so
	 * 1 GiB reserved but unallocated >= the 100 MiB asked: fragmentation */
	facts(&f, &d, torch, NULL);
	d.verdict = "no-leak";
	torch_counters(&d, 1 * GiB, 2 * GiB, 0, 1 * GiB, 2 * GiB);
	d.counters.alloc_retries = 3;
	d.counters.ooms = 1;
	f.counter_retries = 2; /* 3 retries less the 1 OOM; no driver call failed for them */
	f.ooms[f.nooms++] = (struct ex_oom){.device = 0,
					    .size = 100 * MiB,
					    .api = "cudaMalloc",
					    .kase = "this-process",
					    .counters = true,
					    .c_allocated = 9 * GiB,
					    .c_reserved = 10 * GiB,
					    .c_inactive_split = 700 * MiB};
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	const struct ex_finding *o = find(&out, "oom-this-process"), *t = find(&out, "oom-retried");
	CHECK(o && ev_has(o, "tensors 9.00 GiB of 10.0 GiB reserved; 1.00 GiB reserved but "
			     "unallocated (700 MiB in split segments): more than the request"),
	      "oom with counters");
	CHECK(t && has(t->answer, "2 allocations were retried") &&
		  ev_has(t, "num_alloc_retries 3, num_ooms 1"),
	      "retries from the counters: %s", t ? t->answer : "");
	explain_findings_free(&out);
	/* without the reading: the note, and no retries finding */
	f.ooms[0].counters = false;
	f.counter_retries = 0;
	d.counters = (struct ex_counters){0};
	explain_findings(&f, &r, &out);
	o = find(&out, "oom-this-process");
	CHECK(o && ev_has(o, "to see reserved and allocated at the OOM") &&
		  !find(&out, "oom-retried"),
	      "oom without counters");
	explain_findings_free(&out);
	/* an OOM the observer saw and no driver call did */
	f.nooms = 0;
	f.ooms_unseen = 2;
	explain_findings(&f, &r, &out);
	o = find(&out, "oom-invisible");
	CHECK(o && has(o->answer, "2 OOMs were raised by the framework") == false &&
		  has(o->answer, "2 OOMs raised by the framework made no failing driver call"),
	      "oom-invisible from the counters: %s", o ? o->answer : "");
	explain_findings_free(&out);
}

static void test_counters_bfc(void)
{
	struct ex_facts f;
	struct ex_dev d;
	struct ex_recog r;
	struct ex_findings out;
	static const char *const jax[] = {"xla_cuda_plugin.so", NULL};
	/* JAX took 60 GiB of 80; peak_bytes_in_use 10 GiB = 17% of it. With a
	 * fifth to spare: 12 GiB / 80 GiB = .15 */
	facts(&f, &d, jax, NULL);
	d.biggest = d.peak = 60 * GiB;
	d.biggest_lib = "xla_cuda_plugin.so";
	d.verdict = "no-leak";
	d.counters = (struct ex_counters){.present = true,
					  .source = "jax",
					  .api = "jax Device.memory_stats()",
					  .has = CNT_ALLOCATED | CNT_RESERVED | CNT_PEAK_ALLOCATED |
						 CNT_LIMIT,
					  .allocated = 8 * GiB,
					  .reserved = 60 * GiB,
					  .peak_allocated = 10 * GiB,
					  .limit = 60 * GiB};
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	const struct ex_finding *p = find(&out, "preallocation");
	CHECK(p && !p->needs_counters &&
		  ev_has(p, "the program's peak in use was 10.0 GiB, 17% of the 60.0 GiB taken") &&
		  has(p->change,
		      "XLA_CLIENT_MEM_FRACTION=.15 (XLA_PYTHON_CLIENT_MEM_FRACTION in older JAX) "
		      "holds it"),
	      "preallocation with counters: %s", p ? p->change : "");
	explain_findings_free(&out);

	/* TF preallocated 60 GiB, its peak 1 GiB: with a fifth to spare
	 * 1228.8 MiB, rounded up to memory_limit=1229 */
	static const char *const tfp[] = {"libtensorflow_framework.so.2", NULL};
	facts(&f, &d, tfp, NULL);
	d.biggest = d.peak = 60 * GiB;
	d.verdict = "no-leak";
	d.counters = (struct ex_counters){.present = true,
					  .source = "tensorflow",
					  .api = "tf.config.experimental.get_memory_info()",
					  .has = CNT_ALLOCATED | CNT_PEAK_ALLOCATED,
					  .peak_allocated = 1 * GiB};
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	p = find(&out, "preallocation");
	CHECK(p && has(p->change, "The program used at most 1.00 GiB: memory_limit=1229 (MiB)"),
	      "TF preallocation with counters: %s", p ? p->change : "");
	explain_findings_free(&out);

	/* TF growth: 2+4+8+16+32 = 62 MiB, the last 32; before it 30 MiB.
	 * Peak 40 MiB: at least 10 MiB of the last region in use. Peak 20
	 * MiB: it fitted before, the last region was fragmentation's. */
	static const char *const tf[] = {"libtensorflow_framework.so.2", NULL};
	facts(&f, &d, tf, (const char *const[]){"TF_FORCE_GPU_ALLOW_GROWTH", "true", NULL});
	for (int i = 0; i < 5; i++)
		d.regions[d.nregions++] = (2 * MiB) << i;
	d.peak = d.end = 62 * MiB;
	d.biggest = 32 * MiB;
	d.verdict = "no-leak";
	d.counters = (struct ex_counters){.present = true,
					  .source = "tensorflow",
					  .api = "tf.config.experimental.get_memory_info()",
					  .has = CNT_ALLOCATED | CNT_PEAK_ALLOCATED,
					  .peak_allocated = 40 * MiB};
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	const struct ex_finding *g = find(&out, "bfc-growth");
	CHECK(g && !g->needs_counters &&
		  ev_has(g, "the peak in use was 40.0 MiB of the 62.0 MiB") &&
		  ev_has(g, "at least 10.0 MiB of the last region (32.0 MiB)"),
	      "bfc-growth, the last region needed");
	explain_findings_free(&out);
	d.counters.peak_allocated = 20 * MiB;
	explain_findings(&f, &r, &out);
	g = find(&out, "bfc-growth");
	CHECK(g && ev_has(g, "the peak fitted in the regions before the last (30.0 MiB)"),
	      "bfc-growth, the last region from fragmentation");
	explain_findings_free(&out);
}

/* The order a user reads: a small leak (100 MiB) before nvidia-smi's
 * 80 GiB breakdown and the cache's 300 MiB; notes last; a cut trace is a
 * problem. Within problems, the OOM that ended the run first. */
static void test_severity_order(void)
{
	struct ex_facts f;
	struct ex_dev d;
	struct ex_recog r;
	struct ex_findings out;
	static const char *const torch[] = {"libc10_cuda.so", NULL};
	facts(&f, &d, torch, NULL);
	d.peak = 500 * MiB;
	d.seg_mid = 15;
	d.seg_bytes = 300 * MiB;
	d.smi = d.smi_at_peak = d.smi_process = true;
	d.smi_bytes = 80 * GiB;
	d.contexts = 500 * MiB;
	d.verdict = "leak";
	d.rate_s = 10 * MiB; /* over 10 s: 100 MiB */
	f.partial = true;
	f.incomplete_why = "torn tail";
	snprintf(f.blind[f.nblind++], sizeof(f.blind[0]), "a memory fraction");
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	static const char *const want[] = {"leak", "partial-data", "smi-breakdown", "torch-cache",
					   "oom-invisible"};
	CHECK(out.n == 5, "%zu findings", out.n);
	for (size_t i = 0; i < out.n && i < 5; i++)
		CHECK(strcmp(out.v[i].id, want[i]) == 0, "finding %zu: %s, expected %s", i,
		      out.v[i].id, want[i]);
	CHECK(out.v[0].severity == EX_PROBLEM && out.v[1].severity == EX_PROBLEM &&
		  out.v[2].severity == EX_EXPLAINS && out.v[4].severity == EX_NOTE,
	      "severities");
	CHECK(!strcmp(explain_severity_name(EX_PROBLEM), "problem") &&
		  !strcmp(explain_severity_name(EX_EXPLAINS), "explains") &&
		  !strcmp(explain_severity_name(EX_NOTE), "note"),
	      "severity names");
	const struct ex_finding *p = find(&out, "partial-data");
	CHECK(p && has(p->answer, "the trace is incomplete (torn tail)") &&
		  has(p->answer, "a missing free can look like a leak"),
	      "partial-data: %s", p ? p->answer : "");
	explain_findings_free(&out);
	/* a caught OOM of 1 GiB after the fatal one of 64 MiB: the fatal first */
	facts(&f, &d, torch, NULL);
	f.ooms[f.nooms++] = (struct ex_oom){
	    .device = 0, .size = 1 * GiB, .api = "cudaMalloc", .kase = "exceeds-device-total"};
	f.ooms[f.nooms++] = (struct ex_oom){.device = 0,
					    .size = 64 * MiB,
					    .api = "cudaMalloc",
					    .kase = "this-process",
					    .fatal = true};
	f.lost = 3;
	f.partial = true;
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	CHECK(out.n >= 3 && !strcmp(out.v[0].id, "oom-this-process") &&
		  !strcmp(out.v[1].id, "oom-exceeds-device-total") &&
		  !strcmp(out.v[2].id, "partial-data"),
	      "fatal OOM first: %s %s %s", out.v[0].id, out.n > 1 ? out.v[1].id : "",
	      out.n > 2 ? out.v[2].id : "");
	p = find(&out, "partial-data");
	CHECK(p && has(p->answer, "3 allocation or free events were lost") &&
		  has(p->change, "GPUMEMTRACE_RING_KB"),
	      "lost: %s", p ? p->answer : "");
	explain_findings_free(&out);
}

/* PyTorch's settings by their names: PYTORCH_ALLOC_CONF is the current
 * name, PYTORCH_CUDA_ALLOC_CONF the older one that wins when both are set
 * (c10/cuda/CUDAAllocatorConfig.h; checked on the 2.14.1 wheel's libc10.so,
 * docs/settings.md); JAX's fraction by XLA_CLIENT_MEM_FRACTION unless the
 * deprecated name is the one set. */
static void test_setting_names(void)
{
	struct ex_facts f;
	struct ex_dev d;
	struct ex_recog r;
	char b[500];
	static const char *const torch[] = {"libc10_cuda.so", NULL};
	static const char *const jax[] = {"libjax_common.so", "xla_cuda_plugin.so", NULL};
	facts(&f, &d, torch, NULL);
	explain_recognize(&f, &r);
	CHECK(!strcmp(explain_conf_advice(&r, "expandable_segments:True", b, sizeof(b)),
		      "PYTORCH_ALLOC_CONF=expandable_segments:True (PYTORCH_CUDA_ALLOC_CONF before "
		      "PyTorch 2.9)"),
	      "neither set: %s", b);
	CHECK(has(r.mode_why, "PYTORCH_ALLOC_CONF unset"), "default why: %s", r.mode_why);
	/* the current name alone: its value kept, the key replaced */
	facts(&f, &d, torch,
	      (const char *const[]){"PYTORCH_ALLOC_CONF",
				    "max_split_size_mb:64,roundup_power2_divisions:[64:8,>:1],"
				    "expandable_segments:False",
				    NULL});
	explain_recognize(&f, &r);
	CHECK(r.mode == MODE_PT_CACHING && !r.alloc_conf.older, "current name: %d", r.mode);
	CHECK(!strcmp(explain_conf_advice(&r, "expandable_segments:True", b, sizeof(b)),
		      "PYTORCH_ALLOC_CONF=max_split_size_mb:64,roundup_power2_divisions:[64:8,>:1],"
		      "expandable_segments:True"),
	      "merged: %s", b);
	facts(&f, &d, torch,
	      (const char *const[]){"PYTORCH_ALLOC_CONF", "expandable_segments:True", NULL});
	explain_recognize(&f, &r);
	CHECK(r.mode == MODE_PT_EXPANDABLE &&
		  !strcmp(r.mode_why, "PYTORCH_ALLOC_CONF=expandable_segments:True"),
	      "the current name sets the mode: %d %s", r.mode, r.mode_why);
	/* both: the older one is read, the current one ignored */
	facts(&f, &d, torch,
	      (const char *const[]){"PYTORCH_ALLOC_CONF", "expandable_segments:True",
				    "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128", NULL});
	explain_recognize(&f, &r);
	CHECK(r.mode == MODE_PT_CACHING && r.alloc_conf.older &&
		  !strcmp(r.mode_why, "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128; "
				      "PYTORCH_ALLOC_CONF=expandable_segments:True is ignored"),
	      "both set: %d %s", r.mode, r.mode_why);
	explain_conf_advice(&r, "expandable_segments:True", b, sizeof(b));
	CHECK(has(b, "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128,expandable_segments:True (the "
		     "older name, in force here: PyTorch reads it and ignores PYTORCH_ALLOC_CONF"),
	      "both set: %s", b);
	/* the older name alone */
	facts(&f, &d, torch,
	      (const char *const[]){"PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync", NULL});
	explain_recognize(&f, &r);
	CHECK(r.mode == MODE_PT_ASYNC, "older name sets the mode");
	explain_conf_advice(&r, "max_split_size_mb:N", b, sizeof(b));
	CHECK(has(b, "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync,max_split_size_mb:N (the "
		     "older name of PYTORCH_ALLOC_CONF, in force here)"),
	      "older alone: %s", b);
	/* JAX: the deprecated fraction when it is the one set, else the current */
	facts(&f, &d, jax, (const char *const[]){"XLA_PYTHON_CLIENT_MEM_FRACTION", ".6", NULL});
	explain_recognize(&f, &r);
	CHECK(r.fraction == 0.6 &&
		  has(explain_fraction_advice(&r, ".5", b, sizeof(b)),
		      "XLA_PYTHON_CLIENT_MEM_FRACTION=.5 (the deprecated name, in force here"),
	      "jax older: %g %s", r.fraction, b);
	facts(&f, &d, jax, NULL);
	explain_recognize(&f, &r);
	CHECK(!strcmp(explain_fraction_advice(&r, ".5", b, sizeof(b)),
		      "XLA_CLIENT_MEM_FRACTION=.5 (XLA_PYTHON_CLIENT_MEM_FRACTION in older JAX)"),
	      "jax current: %s", b);
	facts(&f, &d, jax,
	      (const char *const[]){"XLA_PYTHON_CLIENT_ALLOCATOR", "cuda_async", NULL});
	explain_recognize(&f, &r);
	CHECK(r.mode == MODE_TF_ASYNC && has(r.mode_name, "cuda_async"), "jax cuda_async: %s",
	      r.mode_name);
	/* the smi-breakdown names JAX's pool figure, pool_bytes (analysis/counters.c) */
	struct ex_findings out;
	facts(&f, &d, jax, NULL);
	d.smi = true;
	d.smi_bytes = 10 * GiB;
	explain_recognize(&f, &r);
	explain_findings(&f, &r, &out);
	const struct ex_finding *x = find(&out, "smi-breakdown");
	CHECK(x && has(x->change, "pool_bytes") && !has(x->change, "bytes_reserved"),
	      "jax figure: %s", x ? x->change : "");
	explain_findings_free(&out);
}

int main(void)
{
	test_setting_names();
	test_severity_order();
	test_mode_texts();
	test_recognize();
	test_helpers();
	test_smi_and_pool();
	test_prealloc_and_growth();
	test_torch_cache_and_verdicts();
	test_oom_unknown_and_blind();
	test_compare();
	test_adapter();
	test_counters_torch();
	test_counters_oom();
	test_counters_bfc();
	return failures ? 1 : 0;
}
