"""torch._C stand-in: the OOM observer list (see torch/__init__.py)."""
import os

_oom_observers = []


def _cuda_attach_out_of_memory_observer(fn):
    if os.environ.get("STANDIN_NO_OBSERVER"):  # as the cudaMallocAsync backend
        raise RuntimeError("cudaMallocAsync does not yet support attachOutOfMemoryObserver")
    _oom_observers.append(fn)
