"""A stand-in for PyTorch in t-api-framework-counters: the shapes of the
APIs the counters helper (python/gpumemtrace/_counters/sitecustomize.py) calls.

- torch.cuda.is_initialized() -> bool; torch.cuda.device_count() -> int;
  torch.cuda._lazy_call(fn): fn now if initialized, else at initialization.
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
- torch.OutOfMemoryError is torch.cuda.OutOfMemoryError, a RuntimeError,
  raised with the allocator's 2.x message (framework-view.md §2.2), after
  the observers ran with (device, alloc, limit or total, device free).
Test-only: torch.cuda.empty(nbytes) -> a block (raises OutOfMemoryError),
del_(block); torch.cuda.set_per_process_memory_fraction(f).
"""
from . import _C, cuda  # noqa: F401
from ._C import OutOfMemoryError  # noqa: F401
