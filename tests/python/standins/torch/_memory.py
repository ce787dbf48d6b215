"""torch.cuda.memory stand-in: the allocator history's API with the real
shapes (framework-view.md section 1; torch 2.13 torch/cuda/memory.py):

- _record_memory_history(enabled="all", context="all", stacks="all",
  max_entries=sys.maxsize, device=None, clear_history=False, ...): enabled
  in {"state", "all", None} (a bool: the legacy form), context in {"state",
  "alloc", "all", None}, stacks in {"python", "all"}; anything else raises;
  enabled=None (or clear_history) drops the history; the last call wins.
  Raises RuntimeError under backend:cudaMallocAsync.
- _snapshot(device=None, augment_with_fx_traces=False) -> dict with
  "segments", "device_traces", "allocator_settings", "external_annotations".
- _dump_snapshot(filename="dump_snapshot.pickle"): pickle.dump(_snapshot()).
- get_allocator_backend() -> "native" or "cudaMallocAsync" (from
  PYTORCH_CUDA_ALLOC_CONF's backend key, else PYTORCH_ALLOC_CONF's: the
  older name is read first, as c10/cuda/CUDAAllocatorConfig.h does).
"""
import os
import pickle
import sys

from . import cuda


def get_allocator_backend():
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF",
                          os.environ.get("PYTORCH_ALLOC_CONF", ""))
    for item in conf.split(","):
        key, _, value = item.partition(":")
        if key.strip() == "backend" and value.strip() == "cudaMallocAsync":
            return "cudaMallocAsync"
    return "native"


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                           device=None, clear_history=False, compile_context=False,
                           global_record_annotations=False, skip_actions=None):
    if isinstance(enabled, bool):  # the legacy form
        enabled = "all" if enabled else None
    if enabled not in ("state", "all", None):
        raise ValueError("expected state to be 'state', 'all', or None")
    if context not in ("state", "alloc", "all", None):
        raise ValueError("expected context to be 'state', 'alloc', 'all', or None")
    if stacks not in ("python", "all"):
        raise ValueError("expected stacks to be 'python', or 'all'")
    if get_allocator_backend() != "native":
        raise RuntimeError("cudaMallocAsync does not yet support recordHistory. "
                           "If you need it, please file an issue describing your use case.")
    cuda._allocator().set_history(enabled, context if enabled else None,
                                  max_entries if enabled == "all" else 1, clear_history)


def _snapshot(device=None, augment_with_fx_traces=False):
    return cuda._allocator().snapshot()


def _dump_snapshot(filename="dump_snapshot.pickle"):
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)
