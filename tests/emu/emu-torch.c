/* A PyTorch training script, emulated at the driver level: the small CNN of
 * tests/gpu/torch_train.py (Adam, batch sizes cycling 64, 96, 128, 160, 32x32
 * images here) on the allocator of torch-alloc.c.
 *
 * What PyTorch does that the trace should show (frameworks.md):
 *   - §1.8: backward runs on the autograd thread pt_autograd_0 while the
 *     main thread, blocked in loss.backward(), has its NVTX "backward" range
 *     open; gradients and backward temporaries are allocated there, the
 *     forward activations and Adam's state (first step) on the main thread;
 *   - §1.9: each thread's cuBLAS handle gets its workspace from the cache
 *     (8,519,680 B, a 20 MiB segment) at its first GEMM, kept for good;
 *   - §5: kernels load lazily: module code appears on the device at first
 *     launches, with no allocation call; the first steps are slow
 *     (autotuning), later ones fast.
 *
 * Scenarios (argv[1]); the backend comes from the environment as in PyTorch
 * (torch-alloc.h). The "EMU" lines printed last are PyTorch's own counters. */
#include <pthread.h>

#include "torch-alloc.h"
#include "torch-history.h"

#define NPARAM	8
#define NACT	9
#define MAXLEAK 4096

static const size_t param_sizes[NPARAM] = {
    6912,     256,  /* conv1 weight, bias */
    294912,   512,  /* conv2 */
    16777216, 2048, /* linear1 128*8*8 -> 512 */
    20480,    40,   /* linear2 512 -> 10 */
};
/* Bytes per sample of each forward activation (conv1, relu, pool, conv2,
 * relu, pool, linear1, relu, logits). */
static const size_t act_per_sample[NACT] = {262144, 262144, 65536, 131072, 131072,
					    32768,  2048,   2048,  40};
#define CUBLAS_WORKSPACE 8519680ull /* §1.9: 4096*1024*2 + 16*1024*8 */

/* With EMU_HISTORY (torch-history.h): the Python stacks PyTorch's history
 * records, innermost first. The frames are the lines of the emulated
 * script (tests/gpu/torch_train.py; the scenarios' additions after it);
 * backward allocates on pt_autograd_0, a thread with no Python frames
 * (python-frames.md), so its entries carry none. */
enum {
	F_MODULE,
	F_MAIN_MODEL,
	F_MAIN_LOOP,
	F_STEP_X,
	F_STEP_Y,
	F_STEP_FWD,
	F_STEP_OPT,
	F_STEP_KEEP,
	F_MAIN_EXTRA
};
static const struct emu_frame frames[] = {
    [F_MODULE] = {"<module>", "train.py", 84},
    [F_MAIN_MODEL] = {"main", "train.py", 38}, /* model = nn.Sequential(...).to(dev) */
    [F_MAIN_LOOP] = {"main", "train.py", 64},  /* loss = step(i) */
    [F_STEP_X] = {"step", "train.py", 46},     /* x = torch.randn(...) */
    [F_STEP_Y] = {"step", "train.py", 47},     /* y = torch.randint(...) */
    [F_STEP_FWD] = {"step", "train.py", 49},   /* loss = loss_fn(model(x), y) */
    [F_STEP_OPT] = {"step", "train.py", 55},   /* opt.step() */
    [F_STEP_KEEP] = {"step", "train.py", 56},  /* losses.append(loss_detail) */
    [F_MAIN_EXTRA] = {"main", "train.py", 66}, /* the scenario's own tensors */
};
enum { S_NONE, S_MODEL, S_X, S_Y, S_FORWARD, S_OPTIMIZER, S_KEEP, S_EXTRA };
static const struct emu_site sites[] = {
    [S_NONE] = {0, {0}},
    [S_MODEL] = {2, {F_MAIN_MODEL, F_MODULE}},
    [S_X] = {3, {F_STEP_X, F_MAIN_LOOP, F_MODULE}},
    [S_Y] = {3, {F_STEP_Y, F_MAIN_LOOP, F_MODULE}},
    [S_FORWARD] = {3, {F_STEP_FWD, F_MAIN_LOOP, F_MODULE}},
    [S_OPTIMIZER] = {3, {F_STEP_OPT, F_MAIN_LOOP, F_MODULE}},
    [S_KEEP] = {3, {F_STEP_KEEP, F_MAIN_LOOP, F_MODULE}},
    [S_EXTRA] = {2, {F_MAIN_EXTRA, F_MODULE}},
};

static struct torch_alloc A;
static struct {
	struct block *param[NPARAM], *grad[NPARAM], *adam[2 * NPARAM];
	struct block *act[NACT], *x, *y, *loss;
	struct block *ws_main, *ws_autograd;
	struct block *kept[MAXLEAK];
	int nkept, step, ranged, oom;
	size_t leak;
} M;

/* Kernels of a few libraries, by module size (the first launch loads). */
static struct emu_kernel k_conv = {"cudnn_conv_fprop", 24 * MiB, NULL};
static struct emu_kernel k_conv_bw = {"cudnn_conv_bprop", 18 * MiB, NULL};
static struct emu_kernel k_gemm = {"cublas_gemm", 12 * MiB, NULL};
static struct emu_kernel k_elem = {"torch_elementwise", 6 * MiB, NULL};
static struct emu_kernel k_adam = {"torch_fused_adam", 2 * MiB, NULL};

static struct block *alloc_or_raise(size_t size)
{
	struct block *b = torch_malloc(&A, size);
	if (!b)
		M.oom = 1;
	return b;
}

/* ---- the autograd thread (§1.8) ---- */
static pthread_mutex_t ag_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ag_cond = PTHREAD_COND_INITIALIZER;
static int ag_work, ag_done, ag_batch, ag_quit;

static void backward_work(int batch)
{
	if (!M.ws_autograd)
		M.ws_autograd = alloc_or_raise(CUBLAS_WORKSPACE);
	struct block *grad_out = alloc_or_raise(act_per_sample[NACT - 1] * batch);
	for (int i = NACT - 1; i >= 0 && !M.oom; i--) {
		emu_launch(i < 6 ? &k_conv_bw : &k_gemm);
		struct block *grad_in = alloc_or_raise(act_per_sample[i > 0 ? i - 1 : 0] * batch);
		torch_free(&A, grad_out);
		grad_out = grad_in;
	}
	for (int p = 0; p < NPARAM && !M.oom; p++)
		M.grad[p] = alloc_or_raise(param_sizes[p]);
	torch_free(&A, grad_out);
	emu_sleep_ms(M.step < 3 ? 8 : 0.3);
}

static void *autograd_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&ag_lock);
	for (;;) {
		while (!ag_work && !ag_quit)
			pthread_cond_wait(&ag_cond, &ag_lock);
		if (ag_quit)
			break;
		ag_work = 0;
		int batch = ag_batch;
		pthread_mutex_unlock(&ag_lock);
		cudaSetDevice(0);
		backward_work(batch);
		pthread_mutex_lock(&ag_lock);
		ag_done = 1;
		pthread_cond_broadcast(&ag_cond);
	}
	pthread_mutex_unlock(&ag_lock);
	return NULL;
}

/* loss.backward(): hands the graph to pt_autograd_0 and waits. */
static void backward(int batch)
{
	pthread_mutex_lock(&ag_lock);
	ag_batch = batch;
	ag_work = 1;
	ag_done = 0;
	pthread_cond_broadcast(&ag_cond);
	while (!ag_done)
		pthread_cond_wait(&ag_cond, &ag_lock);
	pthread_mutex_unlock(&ag_lock);
}

/* ---- one training step, as torch_train.py's step() ---- */
static void forward(int batch)
{
	emu_history_site(S_X);
	M.x = alloc_or_raise(batch * 3 * 32 * 32 * 4ull);
	emu_history_site(S_Y);
	M.y = alloc_or_raise(batch * 8ull);
	emu_history_site(S_FORWARD);
	for (int i = 0; i < NACT && !M.oom; i++) {
		if (i == 6 && !M.ws_main)
			M.ws_main = alloc_or_raise(CUBLAS_WORKSPACE);
		emu_launch(i < 6 ? &k_conv : i == 6 || i == 8 ? &k_gemm : &k_elem);
		M.act[i] = alloc_or_raise(act_per_sample[i] * batch);
	}
	if (!M.oom)
		M.loss = alloc_or_raise(4);
}

static void release_step(void)
{
	for (int i = 0; i < NACT; i++)
		torch_free(&A, M.act[i]), M.act[i] = NULL;
	torch_free(&A, M.x);
	torch_free(&A, M.y);
	torch_free(&A, M.loss);
	M.x = M.y = M.loss = NULL;
}

/* Adam: its state on the first step (main thread), a temporary per
 * parameter on every step. */
static void optimizer_step(void)
{
	emu_history_site(S_OPTIMIZER);
	emu_launch(&k_adam);
	for (int p = 0; p < NPARAM && !M.oom; p++) {
		if (!M.adam[2 * p]) {
			M.adam[2 * p] = alloc_or_raise(param_sizes[p]);
			M.adam[2 * p + 1] = alloc_or_raise(param_sizes[p]);
		}
		torch_free(&A, alloc_or_raise(param_sizes[p]));
	}
}

static void train_step(int batch)
{
	if (M.ranged)
		emu_push("train_step");
	if (M.ranged)
		emu_push("forward");
	forward(batch);
	if (M.ranged)
		emu_pop();
	if (M.ranged)
		emu_push("backward");
	for (int p = 0; p < NPARAM; p++) /* zero_grad(set_to_none=True) */
		torch_free(&A, M.grad[p]), M.grad[p] = NULL;
	if (!M.oom)
		backward(batch);
	if (M.ranged)
		emu_pop();
	if (!M.oom)
		optimizer_step();
	emu_history_site(S_KEEP);
	if (!M.oom && M.leak && M.nkept < MAXLEAK) /* e.g. losses.append(loss_detail) */
		M.kept[M.nkept++] = alloc_or_raise(M.leak);
	release_step();
	emu_history_site(S_EXTRA);
	if (M.ranged)
		emu_pop();
	emu_sleep_ms(M.step < 3 ? 30 : 1);
	M.step++;
}

static pthread_t ag;

static void setup(int ranged)
{
	emu_history_init(frames, sizeof frames / sizeof *frames, sites,
			 sizeof sites / sizeof *sites);
	emu_history_site(S_MODEL);
	torch_init(&A);
	M.ranged = ranged;
	for (int p = 0; p < NPARAM; p++) /* model.to("cuda") */
		M.param[p] = alloc_or_raise(param_sizes[p]);
	pthread_create(&ag, NULL, autograd_thread, NULL);
	pthread_setname_np(ag, "pt_autograd_0");
	emu_history_site(S_EXTRA);
}

/* Ends like the script: counters printed, 1 if it raised an OOM. */
static int finish(void)
{
	pthread_mutex_lock(&ag_lock);
	ag_quit = 1;
	pthread_cond_broadcast(&ag_cond);
	pthread_mutex_unlock(&ag_lock);
	pthread_join(ag, NULL);
	printf("EMU steps %d, tensors kept %d of %zu bytes\n", M.step, M.nkept, M.leak);
	torch_print_stats(&A);
	torch_history_write(&A); /* the helper's snapshot at exit */
	return M.oom ? 1 : 0;
}

static int train(int steps)
{
	for (int i = 0; i < steps && !M.oom; i++)
		train_step(64 + 32 * (M.step % 4));
	return M.oom;
}

/* ---- scenarios ---- */
static int clean(void)
{
	setup(0);
	train(200);
	return finish();
}

static int clean_ranged(void)
{
	setup(1);
	train(200);
	return finish();
}

/* §1.11 (b): under the cache, a leak of <= 1 MiB is one 2 MiB segment every
 * 2 MiB / size steps; 1-10 MiB one 20 MiB segment every 20 MiB / size
 * steps; >= 10 MiB one segment per step. */
static int leak_run(size_t leak, int ranged, int steps)
{
	setup(ranged);
	M.leak = leak;
	train(steps);
	return finish();
}

static int leak_small(void)
{
	return leak_run(256 * KiB, 0, 200);
}

static int leak_mid(void)
{
	return leak_run(MiB + 1, 1, 200); /* rounded 1,049,088: 19 per 20 MiB segment */
}

static int leak_large(void)
{
	return leak_run(12 * MiB, 0, 120);
}

/* §1.11 (c): an evaluation batch far larger than training's. Run on a
 * 1 GiB device: the 512 MiB activations cannot both fit. */
static int oom_exhaust(void)
{
	setup(0);
	train(20);
	forward(2048);
	return finish();
}

/* A request larger than the whole device (2 GiB): 8 GiB. */
static int oom_exceeds(void)
{
	setup(0);
	train(10);
	if (!M.oom)
		M.kept[M.nkept++] = alloc_or_raise(8 * GiB);
	return finish();
}

/* A 1 GiB tensor (an embedding loaded late) on a 4 GiB device where other
 * processes hold 3.2 GiB: it could not fit even were this process empty. */
static int oom_others(void)
{
	setup(0);
	train(10);
	if (!M.oom)
		M.kept[M.nkept++] = alloc_or_raise(GiB);
	return finish();
}

/* §1.4 "A recovered near-OOM": a validation pass at batch 768 leaves large
 * free segments in the cache; a 400 MiB request fits none of them and the
 * device (1 GiB) has no room: cudaMalloc fails, the unsplit segments are
 * freed, the retry succeeds and training goes on. */
static int oom_recovered(void)
{
	setup(0);
	train(10);
	forward(768);
	release_step();
	struct block *big = alloc_or_raise(400 * MiB);
	torch_free(&A, big);
	train(60);
	return finish();
}

/* §1.11 (d): free memory inside the cache that release_cached_blocks cannot
 * give back: 520 tensors of 1.5 MiB fill 40 segments of 20 MiB; one of
 * every 13 is kept, which leaves each segment split. A 300 MiB request then
 * fails twice on a 1 GiB device with 720 MiB free inside the cache. */
static int oom_fragmented(void)
{
	static struct block *t[520];
	setup(0);
	train(10);
	for (int i = 0; i < 520 && !M.oom; i++)
		t[i] = alloc_or_raise(3 * MiB / 2);
	for (int i = 0; i < 520 && !M.oom; i++)
		if (i % 13)
			torch_free(&A, t[i]);
	if (!M.oom)
		alloc_or_raise(300 * MiB);
	return finish();
}

/* §1.4 "Variant — memory fraction set": set_per_process_memory_fraction(0.25)
 * on a 2 GiB device; the 512 MiB activation is refused by PyTorch itself:
 * a cudaFree burst and cudaMemGetInfo, no failing driver call. */
static int oom_fraction(void)
{
	setup(0);
	torch_set_fraction(&A, 0.25);
	train(10);
	forward(2048);
	return finish();
}

int main(int argc, char **argv)
{
	static const struct emu_scenario s[] = {
	    {"clean", clean, "200 steps, no NVTX ranges"},
	    {"clean-ranged", clean_ranged, "200 steps in train_step/forward/backward ranges"},
	    {"leak-small", leak_small, "keeps 256 KiB per step"},
	    {"leak-mid", leak_mid, "keeps 1 MiB + 1 B per step, ranged"},
	    {"leak-large", leak_large, "keeps 12 MiB per step"},
	    {"oom-exhaust", oom_exhaust, "an evaluation batch that cannot fit (1 GiB device)"},
	    {"oom-exceeds", oom_exceeds, "asks for 8 GiB (2 GiB device)"},
	    {"oom-others", oom_others, "a 1 GiB tensor where others hold most of the device"},
	    {"oom-recovered", oom_recovered, "the retry after freeing the cache succeeds"},
	    {"oom-fragmented", oom_fragmented, "free memory in split segments, retry fails"},
	    {"oom-fraction", oom_fraction, "memory fraction: OOM with no failing call"},
	};
	return emu_main(argc, argv, s, sizeof s / sizeof *s);
}
