/* The framework table (frameworks.h). Facts from the frameworks' own
 * wheels and sources (their libraries' names and paths, the symbols of
 * their allocators, the environment variables they read); the libraries
 * that carry a static CUDA runtime are those whose allocations reach the
 * driver by cuGetProcAddress, not through libcudart's exports. */
#include "common/frameworks.h"

#define L(...) ((const char *const[]){__VA_ARGS__, NULL})

const struct gmt_framework gmt_frameworks[GMT_FW_COUNT] = {
    [GMT_FW_PYTORCH] = {.key = "pytorch",
			.name = "PyTorch",
			.kind = GMT_FWK_FRAMEWORK,
			.modules = L("libtorch*", "libc10*"),
			.paths = L("*-packages/torch/*"),
			.cuda_modules = L("*_cuda*"),
			.alloc_rule = "pytorch-allocator",
			.alloc_symbols =
			    L("c10::cuda::CUDACachingAllocator::*", "c10::cuda::*Allocator*"),
			.glue_rule = "pytorch-autograd-engine",
			.glue_symbols = L("torch::autograd::Engine::*",
					  "torch::autograd::python::PythonEngine::*",
					  "torch::autograd::Node::operator()*"),
			.versioned = L("libtorch_cuda"),
			.python = "torch",
			.counters_api = "torch.cuda.memory_stats()"},
    [GMT_FW_TENSORFLOW] = {.key = "tensorflow",
			   .name = "TensorFlow",
			   .kind = GMT_FWK_FRAMEWORK,
			   .modules = L("libtensorflow*", "_pywrap_tensorflow*"),
			   .paths = L("*-packages/tensorflow/*"),
			   .cuda_modules = L("*_cuda*", "*tensorflow_framework*"),
			   .alloc_rule = "tensorflow-allocator",
			   .alloc_symbols = L("tensorflow::*Allocator*"),
			   .versioned = L("libtensorflow_framework"),
			   .python = "tensorflow",
			   .counters_api = "tf.config.experimental.get_memory_info()"},
    [GMT_FW_JAX] = {.key = "jax",
		    .name = "JAX",
		    .kind = GMT_FWK_FRAMEWORK,
		    .modules = L("libjax*", "xla_cuda_plugin*", "*jaxlib*"),
		    .paths = L("*-packages/jaxlib/*", "*-packages/jax_plugins/*",
			       "*-packages/jax_cuda*_plugin/*"),
		    .cuda_modules = L("*_cuda*"),
		    .python = "jax",
		    .counters_api = "jax Device.memory_stats()"},
    /* XLA under JAX (jaxlib's xla_extension before 0.5); its BFC and
     * stream executor are TF's too */
    [GMT_FW_XLA] = {.key = "xla",
		    .name = "XLA",
		    .kind = GMT_FWK_FRAMEWORK,
		    .modules = L("*xla_extension*"),
		    .alloc_rule = "xla-allocator",
		    .alloc_symbols = L("tsl::BFCAllocator::*", "tsl::*Allocator*",
				       "stream_executor::*", "xla::*Allocator*"),
		    .versioned = L("libxla")},
    [GMT_FW_CUPY] = {.key = "cupy",
		     .name = "CuPy",
		     .kind = GMT_FWK_FRAMEWORK,
		     .paths = L("*-packages/cupy/*", "*-packages/cupy_backends/*"),
		     .loose = L("*cupy*"),
		     .cuda_modules = L("*_cuda*"),
		     .alloc_rule = "cupy-memory-pool",
		     .alloc_symbols = L("*cupy_4cuda_6memory*"), /* Cython's cupy.cuda.memory */
		     .python = "cupy"},
#define LIB(id, k, n, m, st, own, ...)                                                             \
	[id] = {.key = k,                                                                          \
		.name = n,                                                                         \
		.kind = GMT_FWK_LIBRARY,                                                           \
		.modules = m,                                                                      \
		.static_runtime = st,                                                              \
		.own_memory = own,                                                                 \
		__VA_ARGS__}
    LIB(GMT_FW_NCCL, "nccl", "NCCL", L("libnccl*"), true, true, .versioned = L("libnccl")),
    LIB(GMT_FW_CUBLAS, "cublas", "cuBLAS", L("libcublas*"), true, true,
	.versioned = L("libcublas", "libcublasLt")),
    LIB(GMT_FW_CUDNN, "cudnn", "cuDNN", L("libcudnn*"), true, true, .versioned = L("libcudnn")),
    LIB(GMT_FW_CUFFT, "cuda-libraries", "cuFFT", L("libcufft*"), true, false),
    LIB(GMT_FW_CURAND, "cuda-libraries", "cuRAND", L("libcurand*"), true, false),
    LIB(GMT_FW_CUSPARSE, "cuda-libraries", "cuSPARSE", L("libcusparse*"), true, false),
    LIB(GMT_FW_CUSOLVER, "cuda-libraries", "cuSOLVER", L("libcusolver*"), true, false),
    LIB(GMT_FW_CUFILE, "cuda-libraries", "cuFile", L("libcufile*"), true, false),
    LIB(GMT_FW_CUPTI, "cuda-libraries", "CUPTI", L("libcupti*"), true, false),
    LIB(GMT_FW_NVRTC, "cuda-libraries", "NVRTC", L("libnvrtc*"), true, false),
    LIB(GMT_FW_NVJITLINK, "cuda-libraries", "nvJitLink", L("libnvJitLink*"), false, false),
    LIB(GMT_FW_NVSHMEM, "cuda-libraries", "NVSHMEM", L("libnvshmem*"), false, false),
    LIB(GMT_FW_NVTX, "cuda-libraries", "NVTX", L("libnvToolsExt*"), false, false),
    LIB(GMT_FW_NPP, "cuda-libraries", "NPP", L("libnpp*"), true, false),
    LIB(GMT_FW_NVJPEG, "cuda-libraries", "nvJPEG", L("libnvjpeg*"), true, false),
    LIB(GMT_FW_CUTENSOR, "cuda-libraries", "cuTENSOR", L("libcutensor*"), true, false),
    LIB(GMT_FW_TENSORRT, "cuda-libraries", "TensorRT", L("libnvinfer*"), true, false),
    LIB(GMT_FW_MAGMA, "cuda-libraries", "MAGMA", L("libmagma*"), true, false),
#undef LIB
    /* what the tracer records the calls of: never anyone's site */
    [GMT_FW_CUDA_DRIVER] = {.key = "cuda-driver",
			    .name = "CUDA driver",
			    .kind = GMT_FWK_CUDA,
			    .modules = L("libcuda.*")},
    [GMT_FW_CUDA_RUNTIME] = {.key = "cuda-runtime",
			     .name = "CUDA runtime",
			     .kind = GMT_FWK_CUDA,
			     .modules = L("libcudart.*", "libcudart-*"),
			     /* the static runtime linked into a program or library */
			     .alloc_rule = "cuda-runtime-static",
			     .alloc_symbols = L("libcudart_static_*", "cudart::*"),
			     .versioned = L("libcudart")},
    [GMT_FW_TRACER] = {.key = "tracer",
		       .name = "gpumemtrace",
		       .kind = GMT_FWK_CUDA,
		       .modules = L("libgpumemtrace*")},
};

/* In the order diff shows them and the library records them. */
const struct gmt_fw_env gmt_fw_env[] = {
    {GMT_FW_PYTORCH, "PYTORCH_CUDA_ALLOC_CONF", GMT_ENV_NAME, true},
    {GMT_FW_PYTORCH, "PYTORCH_NO_CUDA_MEMORY_CACHING", GMT_ENV_NAME, true},
    {GMT_FW_TENSORFLOW, "TF_FORCE_GPU_ALLOW_GROWTH", GMT_ENV_NAME, true},
    {GMT_FW_TENSORFLOW, "TF_GPU_ALLOCATOR", GMT_ENV_NAME, true},
    {GMT_FW_TENSORFLOW, "TF_ENABLE_GPU_GARBAGE_COLLECTION", GMT_ENV_NAME, false},
    {GMT_FW_TENSORFLOW, "TF_DEVICE_MIN_SYS_MEMORY_IN_MB", GMT_ENV_NAME, false},
    {GMT_FW_JAX, "XLA_PYTHON_CLIENT_", GMT_ENV_PREFIX, false},
    {GMT_FW_JAX, "XLA_PYTHON_CLIENT_PREALLOCATE", GMT_ENV_IN_PREFIX, true},
    {GMT_FW_JAX, "XLA_PYTHON_CLIENT_MEM_FRACTION", GMT_ENV_IN_PREFIX, true},
    {GMT_FW_JAX, "XLA_PYTHON_CLIENT_ALLOCATOR", GMT_ENV_IN_PREFIX, true},
    {GMT_FW_JAX, "XLA_CLIENT_MEM_FRACTION", GMT_ENV_NAME, false},
    {GMT_FW_NCCL, "NCCL_", GMT_ENV_PREFIX, false},
    {GMT_FW_NCCL, "NCCL_CUMEM_ENABLE", GMT_ENV_IN_PREFIX, true},
    {GMT_FW_CUDA_DRIVER, "CUDA_MODULE_LOADING", GMT_ENV_NAME, true},
    {GMT_FW_CUDA_DRIVER, "CUDA_VISIBLE_DEVICES", GMT_ENV_NAME, true},
    {GMT_FW_CUBLAS, "CUBLAS_WORKSPACE_CONFIG", GMT_ENV_NAME, false},
    {GMT_FW_CUBLAS, "CUBLASLT_WORKSPACE_SIZE", GMT_ENV_NAME, false},
    {GMT_FW_CUPY, "CUPY_GPU_MEMORY_LIMIT", GMT_ENV_NAME, false},
    /* which process of a job this is, for the reports on several traces */
    {GMT_FW_NONE, "RANK", GMT_ENV_NAME, false},
    {GMT_FW_NONE, "LOCAL_RANK", GMT_ENV_NAME, false},
    {GMT_FW_NONE, "WORLD_SIZE", GMT_ENV_NAME, false},
    {GMT_FW_NONE, "OMPI_COMM_WORLD_RANK", GMT_ENV_NAME, false},
    {GMT_FW_NONE, "PMI_RANK", GMT_ENV_NAME, false},
    {GMT_FW_NONE, "SLURM_PROCID", GMT_ENV_NAME, false},
};
const size_t gmt_fw_nenv = sizeof(gmt_fw_env) / sizeof(gmt_fw_env[0]);
