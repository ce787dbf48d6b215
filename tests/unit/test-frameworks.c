/* The framework table (common/frameworks.c) and its matcher
 * (analysis/frameworks.c): the table holds together, each module of the
 * real traces in docs/validation (and the emulators') falls in the row
 * the reports expect, and the site rules are made from it in order. */
#include <string.h>

#include "analysis/frameworks.h"
#include "analysis/sites.h"
#include "check.h"

#define VENV "/opt/torch/.venv/lib/python3.12/site-packages/"

static void table_holds(void)
{
	CHECK(gmt_frameworks[GMT_FW_NONE].key == NULL, "row 0 is no framework");
	for (int id = 1; id < GMT_FW_COUNT; id++) {
		const struct gmt_framework *w = &gmt_frameworks[id];
		CHECK(w->key && w->name, "row %d: key and name", id);
		CHECK(w->modules || w->paths, "row %d (%s): no module or path", id, w->name);
		CHECK(!w->alloc_symbols || w->alloc_rule, "row %s: symbols without a rule",
		      w->name);
		CHECK(!w->glue_symbols || w->glue_rule, "row %s: glue without a rule", w->name);
	}
	size_t named = 0;
	for (size_t i = 0; i < gmt_fw_nenv; i++) {
		const struct gmt_fw_env *e = &gmt_fw_env[i];
		CHECK(e->fw < GMT_FW_COUNT && e->name && *e->name, "env row %zu", i);
		named += e->how == GMT_ENV_NAME;
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(gmt_fw_env[j].name, e->name) != 0, "%s twice", e->name);
		if (e->how != GMT_ENV_IN_PREFIX)
			continue;
		bool covered = false; /* the library records it by a prefix row */
		for (size_t j = 0; j < gmt_fw_nenv; j++)
			covered |=
			    gmt_fw_env[j].how == GMT_ENV_PREFIX &&
			    strncmp(e->name, gmt_fw_env[j].name, strlen(gmt_fw_env[j].name)) == 0;
		CHECK(covered, "%s: no prefix row records it", e->name);
	}
	CHECK(named <= GMT_ENV_NAMED_MAX, "%zu variables by name, room for %d", named,
	      GMT_ENV_NAMED_MAX);
}

static void modules(void)
{
	static const struct {
		const char *library, *path;
		enum gmt_fw_id want;
	} cases[] = {
	    {"libc10_cuda.so", VENV "torch/lib/libc10_cuda.so", GMT_FW_PYTORCH},
	    {"libtorch_python.so", VENV "torch/lib/libtorch_python.so", GMT_FW_PYTORCH},
	    /* a runtime vendored inside torch/lib is the runtime, not PyTorch */
	    {"libcudart-9335f6a2.so.12", VENV "torch/lib/libcudart-9335f6a2.so.12",
	     GMT_FW_CUDA_RUNTIME},
	    {"libcudart.so.13", VENV "nvidia/cu13/lib/libcudart.so.13", GMT_FW_CUDA_RUNTIME},
	    {"libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1", GMT_FW_CUDA_DRIVER},
	    {"libgpumemtrace.so", "/work/main/.gpu/libgpumemtrace.so", GMT_FW_TRACER},
	    {"_jax.so", VENV "jaxlib/_jax.so", GMT_FW_JAX},
	    {"libjax_common.so", VENV "jaxlib/libjax_common.so", GMT_FW_JAX},
	    {"xla_cuda_plugin.so", VENV "jax_plugins/xla_cuda13/xla_cuda_plugin.so", GMT_FW_JAX},
	    {"xla_extension.so", "/opt/jaxlib/xla_extension.so", GMT_FW_XLA},
	    {"libtensorflow_framework.so.2", VENV "tensorflow/libtensorflow_framework.so.2",
	     GMT_FW_TENSORFLOW},
	    {"memory.cpython-312-x86_64-linux-gnu.so",
	     VENV "cupy/cuda/memory.cpython-312-x86_64-linux-gnu.so", GMT_FW_CUPY},
	    {"libnccl.so.2", VENV "nvidia/nccl/lib/libnccl.so.2", GMT_FW_NCCL},
	    {"libcublasLt.so.13", VENV "nvidia/cu13/lib/libcublasLt.so.13", GMT_FW_CUBLAS},
	    {"libcudnn_graph.so.9", VENV "nvidia/cudnn/lib/libcudnn_graph.so.9", GMT_FW_CUDNN},
	    {"libnvinfer.so.10", "/usr/lib/x86_64-linux-gnu/libnvinfer.so.10", GMT_FW_TENSORRT},
	    /* the emulator is the user's program: its frames are the sites */
	    {"emu-cupy", "/work/main/build/tests/emu/emu-cupy", GMT_FW_NONE},
	    {"python3.12", "/usr/bin/python3.12", GMT_FW_NONE},
	    {"libnumpy.so", VENV "numpy/libnumpy.so", GMT_FW_NONE},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum gmt_fw_id got = fw_of_module(cases[i].library, cases[i].path);
		CHECK(got == cases[i].want, "%s: row %d, expected %d", cases[i].path, got,
		      cases[i].want);
	}
	/* by file name alone, a loose name counts: the emulator shows CuPy */
	CHECK(fw_of_library("emu-cupy") == GMT_FW_CUPY, "emu-cupy by name");
	CHECK(fw_of_library("a.out") == GMT_FW_NONE, "a.out");
	CHECK(fw_of_python("torch") == GMT_FW_PYTORCH, "torch");
	CHECK(fw_of_python("tensorflow") == GMT_FW_TENSORFLOW, "tensorflow");
	CHECK(fw_of_python("numpy") == GMT_FW_NONE && fw_of_python(NULL) == GMT_FW_NONE, "none");
	CHECK(gmt_frameworks[GMT_FW_CUBLAS].static_runtime, "cuBLAS carries a static runtime");
	CHECK(!gmt_frameworks[GMT_FW_PYTORCH].static_runtime, "PyTorch links libcudart");
}

/* The rules: CUDA first, glue inside frameworks before their modules, and
 * every row's module rule by its key. */
static void rules(void)
{
	size_t n;
	const struct site_rule *r = site_rule_list(&n);
	CHECK(n > GMT_FW_COUNT, "%zu rules", n);
	CHECK(strcmp(r[0].name, "cuda-driver") == 0 && r[0].cls == SITE_CUDA, "first: %s",
	      r[0].name);
	size_t glue = n, torch = n;
	for (size_t i = 0; i < n; i++) {
		if (glue == n && strcmp(r[i].name, "pytorch-autograd-engine") == 0)
			glue = i;
		if (torch == n && strcmp(r[i].name, "pytorch") == 0)
			torch = i;
	}
	CHECK(glue < torch && torch < n, "autograd engine %zu before libtorch %zu", glue, torch);
	for (int id = 1; id < GMT_FW_COUNT; id++) {
		bool found = false;
		for (size_t i = 0; i < n; i++)
			found |= strcmp(r[i].name, gmt_frameworks[id].key) == 0;
		CHECK(found, "no rule for %s", gmt_frameworks[id].key);
	}
	CHECK(strcmp(r[n - 1].name, "no-python-frames") == 0, "last: %s", r[n - 1].name);
}

int main(void)
{
	table_holds();
	modules();
	rules();
	return failures ? 1 : 0;
}
