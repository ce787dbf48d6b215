"""A stand-in for PyTorch in t-api-framework-counters: the shapes of the
APIs the counters helper (python/gpumemtrace/_counters/sitecustomize.py) calls.

- torch.cuda.is_initialized() -> bool; torch.cuda.device_count() -> int.
- torch.cuda.memory_stats(device=None) -> dict of int: "allocated_bytes.
  all.current", "reserved_bytes.all.peak", "inactive_split_bytes.all.current",
  ... ("{stat}.{all,large_pool,small_pool}.{current,peak,allocated,freed}"),
  "num_alloc_retries", "num_ooms", "num_device_alloc"...; an empty dict
  before CUDA is initialized.
  https://pytorch.org/docs/stable/generated/torch.cuda.memory_stats.html
- torch._C._cuda_attach_out_of_memory_observer(fn): fn(device, alloc,
  device_allocated, device_free) runs when an allocation fails for good,
  before OutOfMemoryError is raised (torch/csrc/cuda/Module.cpp;
  c10/cuda/CUDACachingAllocator.h, OutOfMemoryObserver).
Test-only: torch.cuda.empty(nbytes) -> a block (None: raised OOM), del_(block).
"""
from . import _C, cuda  # noqa: F401
