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
/* Every variable of the frameworks, their libraries and CUDA that changes
 * how much GPU memory a process takes or how it is held, with the file that
 * reads it or the page that documents it (the project's notes
 * /work/shared/notes/frameworks.md and framework-view.md cite them by
 * commit). */
const struct gmt_fw_env gmt_fw_env[] = {
    /* PyTorch */
    {GMT_FW_PYTORCH, "PYTORCH_ALLOC_CONF", GMT_ENV_NAME, true, NULL, false,
     "the caching allocator's settings (backend:cudaMallocAsync, expandable_segments:True, "
     "max_split_size_mb, garbage_collection_threshold, roundup_power2_divisions...); "
     "read by PyTorch 2.9 and later, and only when PYTORCH_CUDA_ALLOC_CONF is unset",
     "pytorch: c10/core/AllocatorConfig.cpp; docs/source/notes/cuda.rst"},
    {GMT_FW_PYTORCH, "PYTORCH_CUDA_ALLOC_CONF", GMT_ENV_NAME, true, "PYTORCH_ALLOC_CONF", true,
     "the same settings under their older name; when both are set PyTorch reads this one "
     "and ignores PYTORCH_ALLOC_CONF",
     "pytorch: c10/cuda/CUDAAllocatorConfig.h (read first, then PYTORCH_HIP_ALLOC_CONF, "
     "then PYTORCH_ALLOC_CONF); checked on the 2.14.1 wheel's libc10.so"},
    {GMT_FW_PYTORCH, "PYTORCH_NO_CUDA_MEMORY_CACHING", GMT_ENV_NAME, true, NULL, false,
     "any value: no cache, each tensor its own cudaMalloc and cudaFree; "
     "memory_reserved() and memory_allocated() stay 0 and no memory fraction is enforced",
     "pytorch: c10/cuda/CUDACachingAllocator.cpp (forceUncachedAllocator: cudaMalloc "
     "outside the cache)"},
    {GMT_FW_PYTORCH, "TORCH_CUBLASLT_UNIFIED_WORKSPACE", GMT_ENV_NAME, false, NULL, false,
     "whether cuBLASLt shares cuBLAS's workspace (on by default) or gets its own",
     "pytorch: aten/src/ATen/cuda/CublasHandlePool.cpp"},
    /* TensorFlow */
    {GMT_FW_TENSORFLOW, "TF_FORCE_GPU_ALLOW_GROWTH", GMT_ENV_NAME, true, NULL, false,
     "true: BFC grows in doubling regions instead of preallocating the free memory",
     "tensorflow: core/common_runtime/gpu/gpu_bfc_allocator.cc"},
    {GMT_FW_TENSORFLOW, "TF_GPU_ALLOCATOR", GMT_ENV_NAME, true, NULL, false,
     "cuda_malloc_async: CUDA's stream-ordered pool instead of BFC",
     "tensorflow: core/common_runtime/gpu/gpu_process_state.cc"},
    {GMT_FW_TENSORFLOW, "TF_ENABLE_GPU_GARBAGE_COLLECTION", GMT_ENV_NAME, false, NULL, false,
     "BFC frees regions with nothing in use before it fails an allocation (default true)",
     "tensorflow: core/common_runtime/gpu/gpu_bfc_allocator.cc"},
    {GMT_FW_TENSORFLOW, "TF_DEVICE_MIN_SYS_MEMORY_IN_MB", GMT_ENV_NAME, false, NULL, false,
     "the memory left to the system: TF's pool is the free memory less this "
     "(default 225 MiB to 1.8 GiB by GPU generation)",
     "tensorflow: core/common_runtime/gpu/gpu_device.cc (MinSystemMemory)"},
    {GMT_FW_TENSORFLOW, "TF_GPU_HOST_MEM_LIMIT_IN_MB", GMT_ENV_NAME, false, NULL, false,
     "the cap of the pinned host memory pool (cudaHostAlloc)",
     "tensorflow: core/common_runtime/gpu/gpu_process_state.cc"},
    {GMT_FW_TENSORFLOW, "TF_CUDNN_WORKSPACE_LIMIT_IN_MB", GMT_ENV_NAME, false, NULL, false,
     "the largest cuDNN workspace a convolution may take (default 4 GiB)",
     "tensorflow: core/kernels/conv_ops_gpu.h"},
    /* JAX */
    {GMT_FW_JAX, "XLA_PYTHON_CLIENT_", GMT_ENV_PREFIX, false, NULL, false,
     "every JAX client setting (the rows below)", "jaxlib/xla_client.py"},
    {GMT_FW_JAX, "XLA_PYTHON_CLIENT_PREALLOCATE", GMT_ENV_IN_PREFIX, true, NULL, false,
     "anything but false, False or 0 (case-sensitive): preallocate the fraction at "
     "start-up; else grow in regions kept until exit",
     "jaxlib/xla_client.py; JAX's GPU memory allocation page"},
    {GMT_FW_JAX, "XLA_CLIENT_MEM_FRACTION", GMT_ENV_NAME, true, NULL, false,
     "the share of the device's total memory the pool takes (default .75)",
     "jaxlib/xla_client.py; JAX's GPU memory allocation page"},
    {GMT_FW_JAX, "XLA_PYTHON_CLIENT_MEM_FRACTION", GMT_ENV_IN_PREFIX, true,
     "XLA_CLIENT_MEM_FRACTION", false,
     "the same share under its older name (deprecated); setting both is an error",
     "jaxlib/xla_client.py (checked on jaxlib 0.10.2)"},
    {GMT_FW_JAX, "XLA_PYTHON_CLIENT_ALLOCATOR", GMT_ENV_IN_PREFIX, true, NULL, false,
     "default (BFC), platform (a driver call per buffer, freed at once), cuda_async "
     "(CUDA's stream-ordered pool), vmm",
     "jaxlib/xla_client.py; xla: xla/pjrt/gpu/gpu_helpers.cc"},
    {GMT_FW_JAX, "XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB", GMT_ENV_IN_PREFIX, false, NULL, false,
     "memory preallocated for collectives (NCCL buffers, cuMemCreate)", "jaxlib/xla_client.py"},
    /* XLA's runtime, under JAX and TensorFlow alike */
    {GMT_FW_XLA, "TF_FORCE_UNIFIED_MEMORY", GMT_ENV_NAME, false, NULL, false,
     "device memory allocated as managed (unified) memory, which may exceed the device",
     "xla: xla/stream_executor/cuda/cuda_executor.cc"},
    {GMT_FW_XLA, "TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC", GMT_ENV_NAME, false, NULL, false,
     "with TF_GPU_ALLOCATOR=cuda_malloc_async: bytes the pool takes at start-up",
     "xla: xla/stream_executor/gpu/gpu_cudamallocasync_allocator.cc"},
    {GMT_FW_XLA, "TF_PER_DEVICE_MEMORY_LIMIT_MB", GMT_ENV_NAME, false, NULL, false,
     "a cap on what the StreamExecutor allocates per device (TF's and XLA's tests set it)",
     "xla: xla/stream_executor/stream_executor_pimpl.cc (GetMemoryLimitBytes)"},
    {GMT_FW_XLA, "XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB", GMT_ENV_NAME, false, NULL, false,
     "the cap of the pinned host memory XLA allocates (default 64 GiB)",
     "xla: xla/pjrt/gpu/gpu_helpers.cc; its out-of-host-memory error names it"},
    {GMT_FW_XLA, "XLA_FLAGS", GMT_ENV_NAME, false, NULL, false,
     "XLA's compiler and runtime flags, some of which change memory "
     "(--xla_gpu_memory_limit_slop_factor, command buffers, autotuning's scratch)",
     "xla/debug_options_flags.cc"},
    /* CuPy */
    {GMT_FW_CUPY, "CUPY_GPU_MEMORY_LIMIT", GMT_ENV_NAME, false, NULL, false,
     "the pool's limit, in bytes or a percentage of the device; over it CuPy raises "
     "OutOfMemoryError without a driver call",
     "cupy: cupy/cuda/memory.pyx; CuPy's environment variables page"},
    /* NCCL: every NCCL_ variable is recorded; these change its memory */
    {GMT_FW_NCCL, "NCCL_", GMT_ENV_PREFIX, false, NULL, false, "every NCCL setting",
     "NCCL's environment variables page"},
    {GMT_FW_NCCL, "NCCL_BUFFSIZE", GMT_ENV_IN_PREFIX, false, NULL, false,
     "the buffer per channel and peer of the Simple protocol (default 4 MiB)",
     "nccl: src/init.cc, src/include/alloc.h; NCCL's environment variables page"},
    {GMT_FW_NCCL, "NCCL_LL_BUFFSIZE", GMT_ENV_IN_PREFIX, false, NULL, false,
     "the LL protocol's buffer (default 512 KiB)",
     "nccl: src/init.cc, src/include/alloc.h; NCCL's environment variables page"},
    {GMT_FW_NCCL, "NCCL_LL128_BUFFSIZE", GMT_ENV_IN_PREFIX, false, NULL, false,
     "the LL128 protocol's buffer (default 4.69 MiB)",
     "nccl: src/init.cc, src/include/alloc.h; NCCL's environment variables page"},
    {GMT_FW_NCCL, "NCCL_MAX_NCHANNELS", GMT_ENV_IN_PREFIX, false, NULL, false,
     "the most channels: each has its own buffers", "NCCL's environment variables page"},
    {GMT_FW_NCCL, "NCCL_NVLS_ENABLE", GMT_ENV_IN_PREFIX, false, NULL, false,
     "NVLink SHARP, whose buffers are large (0 turns it off)", "NCCL's environment variables page"},
    {GMT_FW_NCCL, "NCCL_CUMEM_ENABLE", GMT_ENV_IN_PREFIX, true, NULL, false,
     "buffers through cuMemCreate (VMM) rather than cudaMalloc",
     "nccl: src/init.cc, src/include/alloc.h; NCCL's environment variables page"},
    {GMT_FW_NCCL, "NCCL_CUMEM_HOST_ENABLE", GMT_ENV_IN_PREFIX, false, NULL, false,
     "host buffers through cuMemCreate (auto: on with driver 12.6 and later)",
     "nccl: src/init.cc, src/include/alloc.h; NCCL's environment variables page"},
    {GMT_FW_NCCL, "NCCL_WORK_FIFO_BYTES", GMT_ENV_IN_PREFIX, false, NULL, false,
     "the work FIFO in mapped host memory (default 1 MiB)",
     "nccl: src/init.cc, src/include/alloc.h; NCCL's environment variables page"},
    {GMT_FW_NCCL, "NCCL_RUNTIME_CONNECT", GMT_ENV_IN_PREFIX, false, NULL, false,
     "connect (and allocate buffers) per algorithm as first used, not all at init",
     "nccl: src/init.cc, src/include/alloc.h; NCCL's environment variables page"},
    /* cuBLAS (PyTorch reads both to size the workspaces it allocates) */
    {GMT_FW_CUBLAS, "CUBLAS_WORKSPACE_CONFIG", GMT_ENV_NAME, false, NULL, false,
     ":SIZE_KiB:COUNT[...]: cuBLAS's workspace per handle and stream",
     "pytorch: aten/src/ATen/cuda/CublasHandlePool.cpp; cuBLAS documentation"},
    {GMT_FW_CUBLAS, "CUBLASLT_WORKSPACE_SIZE", GMT_ENV_NAME, false, NULL, false,
     "cuBLASLt's workspace in KiB (PyTorch; default 1024)",
     "pytorch: aten/src/ATen/cuda/CublasHandlePool.cpp"},
    /* the CUDA driver and runtime */
    {GMT_FW_CUDA_DRIVER, "CUDA_MODULE_LOADING", GMT_ENV_NAME, true, NULL, false,
     "LAZY (the default since CUDA 12.2; PyTorch sets it): kernels loaded as first used; "
     "EAGER: all at start-up",
     "CUDA Programming Guide, Lazy Loading; pytorch: CUDAHooks (sets LAZY)"},
    {GMT_FW_CUDA_DRIVER, "CUDA_VISIBLE_DEVICES", GMT_ENV_NAME, true, NULL, false,
     "which GPUs the process sees: a context (hundreds of MiB) on each it uses",
     "CUDA Programming Guide, CUDA Environment Variables"},
    {GMT_FW_CUDA_DRIVER, "CUDA_MODULE_DATA_LOADING", GMT_ENV_NAME, false, NULL, false,
     "LAZY or EAGER loading of the modules' data", "CUDA Programming Guide, Lazy Loading"},
    {GMT_FW_CUDA_DRIVER, "CUDA_MANAGED_FORCE_DEVICE_ALLOC", GMT_ENV_NAME, false, NULL, false,
     "1: managed allocations placed in device memory",
     "CUDA Programming Guide, CUDA Environment Variables"},
    {GMT_FW_CUDA_DRIVER, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", GMT_ENV_NAME, false, NULL, false,
     "under MPS: the device memory each client may allocate", "NVIDIA MPS documentation"},
    /* which process of a job this is, for the reports on several traces */
    {GMT_FW_NONE, "RANK", GMT_ENV_NAME, false, NULL, false, NULL, NULL},
    {GMT_FW_NONE, "LOCAL_RANK", GMT_ENV_NAME, false, NULL, false, NULL, NULL},
    {GMT_FW_NONE, "WORLD_SIZE", GMT_ENV_NAME, false, NULL, false, NULL, NULL},
    {GMT_FW_NONE, "OMPI_COMM_WORLD_RANK", GMT_ENV_NAME, false, NULL, false, NULL, NULL},
    {GMT_FW_NONE, "PMI_RANK", GMT_ENV_NAME, false, NULL, false, NULL, NULL},
    {GMT_FW_NONE, "SLURM_PROCID", GMT_ENV_NAME, false, NULL, false, NULL, NULL},
};
const size_t gmt_fw_nenv = sizeof(gmt_fw_env) / sizeof(gmt_fw_env[0]);
