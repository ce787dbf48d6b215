"""torch._C stand-in: the OOM observer list (see torch/__init__.py)."""
import os

_oom_observers = []


class OutOfMemoryError(RuntimeError):
    """torch.OutOfMemoryError (is torch.cuda.OutOfMemoryError): a
    RuntimeError, no fields (framework-view.md §2.1)."""


OutOfMemoryError.__module__ = "torch"


def _cuda_attach_out_of_memory_observer(fn):
    if os.environ.get("STANDIN_NO_OBSERVER"):  # as the cudaMallocAsync backend
        raise RuntimeError("cudaMallocAsync does not yet support attachOutOfMemoryObserver")
    _oom_observers.append(fn)
