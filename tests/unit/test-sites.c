/* analysis/sites.c, the site rules, on stacks shaped like the real ones of
 * tests/real/2026-11-2[23]-h100 (module paths and symbols copied
 * from verify-torch-nocache.1167, nccl.1021, jax-default.1043,
 * plain-static.718), written by the test-only trace builder: the site each
 * stack gets, the rule that passed over each frame before it, --raw-sites,
 * --hide and --focus, the static runtime's driver calls as runtime APIs,
 * and short C++ names. */
#include <stdio.h>
#include <string.h>

#include "analysis/sites.h"
#include "analysis/trace.h"
#include "check.h"
#include "trace-file.h"

#define CHECK_STR(got, want)                                                                       \
	do {                                                                                       \
		const char *g_ = (got), *w_ = (want);                                              \
		CHECK(strcmp(g_, w_) == 0, "got '%s', expected '%s'", g_, w_);                     \
	} while (0)

/* frames are {module, function} or {0, NULL, python id} */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define VENV "/opt/torch/.venv/lib/python3.12/site-packages/"
enum { CUDA = 1, C10, TCPU, TPY, PY, LIBC, CUDART, FFI, CTYPES, APP, JAX, XLAPLUG, STDCXX };
static const char *const paths[] = {
    NULL,
    "/usr/local/nvidia/lib64/libcuda.so.1",
    VENV "torch/lib/libc10_cuda.so",
    VENV "torch/lib/libtorch_cpu.so",
    VENV "torch/lib/libtorch_python.so",
    "/usr/bin/python3.12",
    "/lib/x86_64-linux-gnu/libc.so.6",
    VENV "torch/lib/../../nvidia/cu13/lib/libcudart.so.13",
    "/lib/x86_64-linux-gnu/libffi.so.8",
    "/usr/lib/python3.12/lib-dynload/_ctypes.cpython-312-x86_64-linux-gnu.so",
    "/work/app/plain-static",
    VENV "jaxlib/_jax.so",
    VENV "jax_plugins/xla_cuda13/xla_cuda_plugin.so",
    "/lib/x86_64-linux-gnu/libstdc++.so.6",
};

/* A frame: module m's function fn (NULL: no symbol), or Python frame py. */
struct fr {
	int m;
	const char *fn;
	int py; /* > 0: PYFRAME id; -1: "Python frames unavailable" */
};

static uint64_t next_node = 1, next_ip[16];

static uint64_t ip_of(struct tb *b, const struct fr *f)
{
	if (f->py)
		return GMT_PYFRAME_IP(f->py > 0 ? (uint64_t)f->py : GMT_PYFRAME_NONE);
	uint64_t ip = (uint64_t)f->m * 0x1000000 + 0x100 + next_ip[f->m]++ * 0x10;
	if (f->fn)
		tb_symbol(b, ip, (uint64_t)f->m, f->fn, "", 0);
	return ip;
}

/* Frames outermost first; returns the stack id (the innermost node). */
static uint64_t stack(struct tb *b, const struct fr *frames, size_t n)
{
	uint64_t parent = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t ip = ip_of(b, &frames[i]);
		tb_stack(b, 1, &parent, &ip);
		parent = next_node++;
	}
	return parent;
}
#define STACK(b, ...)                                                                              \
	stack(b, (const struct fr[]){__VA_ARGS__},                                                 \
	      sizeof((const struct fr[]){__VA_ARGS__}) / sizeof(struct fr))

static uint64_t s_torch_py, s_torch_nopy, s_autograd, s_pydll, s_static, s_jax, s_cuda, s_cdll,
    s_trim;

static const char *write_trace(void)
{
	struct tb *b = tb_new(NULL);
	for (int m = 1; m <= STDCXX; m++)
		tb_module(b, (uint64_t)m, 0, (uint64_t)m * 0x1000000, (uint64_t)(m + 1) * 0x1000000,
			  paths[m], NULL, 0);
	tb_pyframe(b, 1, "<module>", "/home/u/train.py", 50);
	tb_pyframe(b, 2, "forward", "/home/u/train.py", 30);
	tb_pyframe(b, 3, "_call_impl", VENV "torch/nn/modules/module.py", 1784);
	tb_pyframe(b, 4, "grow_model_weights", "/home/u/py_workload.py", 7);
	tb_pyframe(b, 5, "<module>", "/home/u/jax_train.py", 9);
	/* PyTorch once Python frames are read without the GIL */
	s_torch_py = STACK(b, {APP, "_start"}, {PY, "Py_RunMain"}, {0, NULL, 1}, {0, NULL, 2},
			   {0, NULL, 3}, {PY, "_PyObject_MakeTpCall"},
			   {TPY, "torch::autograd::THPVariable_relu(_object*, _object*, _object*)"},
			   {TCPU, "at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, "
				  "c10::DispatchKeySet, c10::ScalarType, "
				  "std::optional<c10::MemoryFormat>)"},
			   {C10, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::"
				 "allocate(unsigned long)"},
			   {CUDART, "cudaMalloc"}, {CUDA, "cuMemAlloc_v2"});
	/* the same, as the H100 traces hold it: no Python frames */
	s_torch_nopy =
	    STACK(b, {0, NULL, -1}, {LIBC, "__libc_start_main"}, {PY, "Py_RunMain"}, {PY, NULL},
		  {TPY, "torch::autograd::THPVariable_ones(_object*, _object*, _object*)"},
		  {TCPU, "at::native::ones(c10::ArrayRef<long>, std::optional<c10::ScalarType>)"},
		  {C10, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::"
			"alloc_block(c10::cuda::CUDACachingAllocator::Native::(anonymous "
			"namespace)::AllocParams&, bool)"},
		  {CUDART, NULL});
	/* the autograd engine's thread */
	s_autograd =
	    STACK(b, {0, NULL, -1}, {LIBC, NULL}, {STDCXX, NULL},
		  {TPY, "torch::autograd::python::PythonEngine::thread_init(int, "
			"std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)"},
		  {TCPU, "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::"
			 "GraphTask> const&)"},
		  {TCPU, "torch::autograd::Node::operator()(std::vector<at::Tensor, "
			 "std::allocator<at::Tensor> >&&)"},
		  {TCPU, "torch::autograd::generated::ReluBackward0::apply(std::vector<at::Tensor, "
			 "std::allocator<at::Tensor> >&&)"},
		  {C10, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate("
			"unsigned long)"},
		  {CUDART, NULL});
	/* ctypes.PyDLL: the GIL held, Python frames present */
	s_pydll =
	    STACK(b, {0, NULL, 4}, {PY, "_PyEval_EvalFrameDefault"}, {CTYPES, "_ctypes_callproc"},
		  {FFI, "ffi_call"}, {FFI, NULL}, {CUDART, "cudaMalloc"});
	/* ctypes.CDLL without Python frames (GPUMEMTRACE_PYTHON=0, an old
	 * trace): libffi, _ctypes and libpython only */
	s_cdll = STACK(b, {LIBC, "__libc_start_main"}, {PY, "Py_RunMain"},
		       {PY, "_PyEval_EvalFrameDefault"}, {PY, "_PyObject_MakeTpCall"},
		       {CTYPES, "PyCFuncPtr_call"}, {CTYPES, "_ctypes_callproc"}, {FFI, "ffi_call"},
		       {FFI, NULL}, {FFI, NULL}, {CUDA, "cuMemAlloc_v2"});
	/* the static runtime linked into a C program */
	s_static = STACK(b, {LIBC, "__libc_start_main"}, {APP, "main"}, {APP, "cudaMalloc"},
			 {APP, "libcudart_static_f74e2f2bcf2cf49bd1a61332e1d15bd1e748f9cf"},
			 {APP, "libcudart_static_5382377d5c772c9d197c0cda9fd9742ee6ad893c"},
			 {CUDA, "cuMemAlloc_v2"});
	s_trim = STACK(b, {LIBC, "__libc_start_main"}, {APP, "main"}, {APP, "cudaMemPoolTrimTo"},
		       {APP, "libcudart_static_f74e2f2bcf2cf49bd1a61332e1d15bd1e748f9cf"},
		       {CUDA, "cuMemPoolTrimTo"});
	/* JAX: BFC and the stream executor inside the plugin, called from jaxlib */
	s_jax =
	    STACK(b, {0, NULL, 5}, {PY, "_PyEval_EvalFrameDefault"},
		  {JAX, "jax::(anonymous namespace)::PjitFunction::Call(nanobind::handle, "
			"_object* const*, unsigned long, _object*)"},
		  {XLAPLUG, "tsl::BFCAllocator::AllocateRaw(unsigned long, unsigned long)"},
		  {XLAPLUG, "stream_executor::gpu::CudaExecutor::Allocate(unsigned long, long)"},
		  {CUDA, "cuMemCreate"});
	s_cuda = STACK(b, {CUDART, "cudaMalloc"}, {CUDA, "cuMemAlloc_v2"});
	const char *p = trace_file(b, "sites.gmt");
	tb_free(b);
	return p;
}

static char buf[1024];

static const char *site(struct trace *t, uint64_t id)
{
	struct trace_frame f;
	if (!trace_site(t, id, &f))
		return "(none)";
	return trace_frame_text(&f, buf, sizeof(buf));
}

/* The rule names that passed over the frames before the site, innermost
 * first, "/"-separated. */
static const char *skipped(struct trace *t, uint64_t id)
{
	static char out[1024];
	struct site_choice c;
	struct trace_frame *fr;
	site_choose(t, id, &c);
	int n = trace_frames(t, id, &fr);
	out[0] = 0;
	for (int i = 0; i < c.depth && i < n; i++) {
		enum site_class cls;
		const char *r = site_rule_name(site_rule_of(t->site_opts, &fr[i], &cls));
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", i ? "/" : "",
			 r ? r : "(user)");
	}
	free(fr);
	return out;
}

static void test_sites(const char *path)
{
	struct trace t;
	CHECK(trace_open(&t, "test", path) < 0, "open");
	t.short_names = true;
	CHECK_STR(site(&t, s_torch_py), "forward (/home/u/train.py:30)");
	CHECK_STR(
	    skipped(&t, s_torch_py),
	    "cuda-driver/cuda-runtime/pytorch-allocator/pytorch/pytorch/python/python-package");
	CHECK_STR(site(&t, s_torch_nopy),
		  "torch::autograd::THPVariable_ones (libtorch_python.so+0x4000110)");
	CHECK_STR(site(&t, s_autograd),
		  "torch::autograd::generated::ReluBackward0::apply (libtorch_cpu.so+0x3000140)");
	CHECK_STR(site(&t, s_pydll), "grow_model_weights (/home/u/py_workload.py:7)");
	CHECK_STR(skipped(&t, s_pydll), "cuda-runtime/libffi/libffi/ctypes/python");
	CHECK_STR(site(&t, s_static), "main (plain-static+0xa000110)");
	CHECK_STR(skipped(&t, s_static),
		  "cuda-driver/cuda-runtime-static/cuda-runtime-static/cuda-runtime-static");
	CHECK_STR(site(&t, s_jax), "<module> (/home/u/jax_train.py:9)");
	CHECK_STR(skipped(&t, s_jax), "cuda-driver/xla-allocator/xla-allocator/jax/python");
	/* no Python frames: the way in from Python, not libffi */
	CHECK_STR(site(&t, s_cdll),
		  "PyCFuncPtr_call (_ctypes.cpython-312-x86_64-linux-gnu.so+0x9000110)");
	CHECK_STR(skipped(&t, s_cdll), "cuda-driver/libffi/libffi/libffi/ctypes");
	struct trace_frame f;
	CHECK(trace_site(&t, s_cuda, &f) && f.depth == 0 && f.in_cuda, "all in CUDA");
	struct site_choice c;
	site_choose(&t, s_cuda, &c);
	CHECK(c.in_cuda && !c.fallback, "all in CUDA: not a fallback");
	site_choose(&t, s_torch_nopy, &c);
	CHECK(c.fallback && !c.in_cuda, "no user frame: the fallback");
	/* the library column: who made the call, whatever the site */
	CHECK_STR(trace_library(&t, s_torch_py), "libc10_cuda.so");
	CHECK_STR(trace_library(&t, s_pydll), "libffi.so.8");
	CHECK_STR(trace_library(&t, s_static), "plain-static");
	/* the static runtime's driver calls are the runtime API; the shared
	 * runtime's driver calls and the JAX plugin's stay what they are */
	CHECK(site_api(&t, s_static, GMT_API_cuMemAlloc_v2) == GMT_API_cudaMalloc, "static api");
	CHECK(site_api(&t, s_trim, GMT_API_cuMemPoolTrimTo) == GMT_API_cudaMemPoolTrimTo, "trim");
	CHECK(site_api(&t, s_torch_py, GMT_API_cuMemAlloc_v2) == GMT_API_cuMemAlloc_v2, "shared");
	CHECK(site_api(&t, s_jax, GMT_API_cuMemCreate) == GMT_API_cuMemCreate, "jax");
	trace_close(&t);
}

static void test_options(const char *path)
{
	struct trace t;
	struct site_opts o = {0};
	char err[256];
	CHECK(trace_open(&t, "test", path) < 0, "open");
	t.short_names = true;
	t.site_opts = &o;
	o.raw = true;
	CHECK_STR(site(&t, s_torch_py),
		  "c10::cuda::CUDACachingAllocator::Native::"
		  "NativeCachingAllocator::allocate (libc10_cuda.so+0x2000100)");
	CHECK(site_api(&t, s_static, GMT_API_cuMemAlloc_v2) == GMT_API_cuMemAlloc_v2, "raw api");
	site_cache_free(&t);
	o.raw = false;
	const char *hide[] = {"train\\.py$"}, *focus[] = {"^at::detail::empty_"};
	CHECK(!site_opts_init(&o, hide, 1, NULL, 0, err, sizeof(err)), "hide");
	CHECK_STR(site(&t, s_torch_py),
		  "torch::autograd::THPVariable_relu (libtorch_python.so+0x4000100)");
	site_opts_free(&o);
	site_cache_free(&t);
	const char *hide2[] = {"^forward$"};
	CHECK(!site_opts_init(&o, hide2, 1, focus, 1, err, sizeof(err)), "focus");
	CHECK_STR(site(&t, s_torch_py), "at::detail::empty_generic (libtorch_cpu.so+0x3000100)");
	CHECK_STR(skipped(&t, s_torch_py), "cuda-driver/cuda-runtime/pytorch-allocator");
	site_opts_free(&o);
	site_cache_free(&t);
	CHECK(!site_opts_init(&o, hide2, 1, NULL, 0, err, sizeof(err)), "hide forward");
	CHECK_STR(site(&t, s_torch_py), "<module> (/home/u/train.py:50)");
	size_t i = 0;
	bool is_focus;
	CHECK(!site_opts_unmatched(&o, &i, &is_focus), "--hide ^forward$ matched");
	site_opts_free(&o);
	site_cache_free(&t);
	/* an expression that matches no frame is named, the sites unchanged */
	const char *none[] = {"^no_such_frame$"}, *hide3[] = {"^forward$", "zzz"};
	CHECK(!site_opts_init(&o, hide3, 2, none, 1, err, sizeof(err)), "unmatched");
	CHECK_STR(site(&t, s_torch_py), "<module> (/home/u/train.py:50)");
	i = 0;
	CHECK_STR(site_opts_unmatched(&o, &i, &is_focus), "zzz");
	CHECK(!is_focus, "zzz is a --hide");
	CHECK_STR(site_opts_unmatched(&o, &i, &is_focus), "^no_such_frame$");
	CHECK(is_focus, "a --focus");
	CHECK(!site_opts_unmatched(&o, &i, &is_focus), "two unmatched");
	site_opts_free(&o);
	const char *bad[] = {"("};
	CHECK(site_opts_init(&o, bad, 1, NULL, 0, err, sizeof(err)) != NULL, "bad regex");
	CHECK(strncmp(err, "--hide '(': ", 12) == 0, "%s", err);
	t.site_opts = NULL;
	trace_close(&t);
}

static void test_short_names(void)
{
	static const char *const cases[][2] = {
	    {"c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block(c10::"
	     "cuda::CUDACachingAllocator::Native::(anonymous namespace)::AllocParams&, bool, "
	     "std::shared_ptr<c10::GatheredContext> const&, "
	     "std::unique_lock<std::recursive_mutex>&)",
	     "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block"},
	    {"at::(anonymous namespace)::(anonymous namespace)::wrapper_CUDA__convolution_backward("
	     "at::Tensor const&)",
	     "at::(anon)::(anon)::wrapper_CUDA__convolution_backward"},
	    {"void at::cuda::blas::gemm_internal_cublas<float, float>(char, char, long)",
	     "at::cuda::blas::gemm_internal_cublas<\xe2\x80\xa6>"},
	    {"at::Tensor at::_sum_to<c10::SymInt>(at::Tensor, c10::ArrayRef<c10::SymInt>, bool)",
	     "at::_sum_to<\xe2\x80\xa6>"},
	    {"at::empty(c10::ArrayRef<long>, c10::TensorOptions, std::optional<c10::MemoryFormat>) "
	     "[clone .constprop.0]",
	     "at::empty"},
	    {"torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> "
	     ">&&)",
	     "torch::autograd::Node::operator()"},
	    {"jax::nanobind__jax_exec_impl(nanobind::module_)::$_50::operator()(nanobind::object) "
	     "const",
	     "jax::nanobind__jax_exec_impl::$_50::operator()"},
	    {"std::__detail::__variant::__gen_vtable_impl<std::__detail::__variant::_Multi_array<"
	     "int>>::__visit_invoke(int)",
	     "std::__detail::__variant::__gen_vtable_impl<\xe2\x80\xa6>::__visit_invoke"},
	    /* one function by address: a wrapper per function keeps which (nccl.1021's
	     * `==`); anything more stays elided */
	    {"_object* torch::autograd::TypeError_to_NotImplemented_<&torch::autograd::"
	     "THPVariable___eq__>(_object*, _object*, _object*)",
	     "torch::autograd::TypeError_to_NotImplemented_<THPVariable___eq__>"},
	    {"void f<&g>(int)", "f<g>"},
	    {"void f<&g, 3>(int)", "f<\xe2\x80\xa6>"},
	    {"void f<&ns::g<int>>(int)", "f<\xe2\x80\xa6>"},
	    {"foo::{lambda(int)#1}::operator()(int) const", "foo::{lambda(int)#1}::operator()"},
	    {"std::ostream::operator<<(int)", "std::ostream::operator<<"},
	    {"cudnnCreate", "cudnnCreate"},
	    {"main", "main"},
	};
	char out[512];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK_STR(site_short_name(cases[i][0], out, sizeof(out)), cases[i][1]);
}

int main(void)
{
	const char *p = write_trace();
	test_sites(p);
	test_options(p);
	test_short_names();
	return failures ? 1 : 0;
}
