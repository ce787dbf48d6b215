"""gpumemtrace's marker API for Python: name the phases of a program in its trace.

    import gpumemtrace
    with gpumemtrace.range("epoch 3"):
        train_one_epoch()
    gpumemtrace.mark("checkpoint saved")
    gpumemtrace.counters("cupy", "cuda:0", {"used_bytes": pool.used_bytes()}, ordinal=0)

Every call is a no-op when libgpumemtrace.so is not loaded (LD_PRELOAD), so
the same script runs traced or not. Ranges nest per thread.
"""
import contextlib
import ctypes

__all__ = ["mark", "range_push", "range_pop", "range", "counters", "active"]


def _entry(name, argtypes):
    try:
        fn = getattr(ctypes.CDLL(None), name)
    except (AttributeError, OSError):
        return None
    fn.argtypes = argtypes
    fn.restype = None
    return fn


_mark = _entry("gpumemtrace_mark_v1", [ctypes.c_char_p])
_push = _entry("gpumemtrace_range_push_v1", [ctypes.c_char_p])
_pop = _entry("gpumemtrace_range_pop_v1", [])
_counters = _entry("gpumemtrace_counters_v1",
                   [ctypes.c_uint, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64,
                    ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
                    ctypes.POINTER(ctypes.c_uint64)])


def _text(text):
    if text is None:
        return None
    if isinstance(text, bytes):
        return text
    return str(text).encode("utf-8", "replace")


def active():
    """True when the tracer is loaded and the calls are recorded."""
    return _mark is not None


def mark(text):
    """An instant in the trace."""
    if _mark is not None:
        _mark(_text(text))


def range_push(text):
    """Opens a range on the calling thread; range_pop closes it."""
    if _push is not None:
        _push(_text(text))


def range_pop():
    if _pop is not None:
        _pop()


def counters(source, device, stats, ordinal=-1, reason=0):
    """A framework's own memory counters (a COUNTERS record): `stats` maps
    names to non-negative ints (others are left out; at most 64 kept).
    `reason`: 0 periodic, 1 at an OOM, 2 first, 3 at exit."""
    if _counters is None:
        return
    items = [(_text(k), v) for k, v in stats.items()
             if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64][:64]
    names = (ctypes.c_char_p * max(len(items), 1))(*[k for k, _ in items])
    values = (ctypes.c_uint64 * max(len(items), 1))(*[v for _, v in items])
    _counters(reason, _text(source), _text(device), ordinal, len(items), names, values)


@contextlib.contextmanager
def range(text):  # pylint: disable=redefined-builtin
    """A range around a block."""
    range_push(text)
    try:
        yield
    finally:
        range_pop()


# Reading traces (gpumemtrace.reader), imported on first use: the marker
# API above stays cheap to import in a traced program.
_READER_NAMES = ("load", "Trace", "Table", "TraceError", "IncompleteTraceWarning", "schema")


def load_ipython_extension(ipython):
    """`%load_ext gpumemtrace`: the %%gpumemtrace cell magic and the
    %gpumemtrace line magics (gpumemtrace.notebook)."""
    from . import notebook  # pylint: disable=import-outside-toplevel

    notebook.load(ipython)


def __getattr__(name):
    import importlib  # pylint: disable=import-outside-toplevel

    if name in _READER_NAMES:
        return getattr(importlib.import_module(".reader", __name__), name)
    if name in ("reader", "parquet"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'gpumemtrace' has no attribute %r" % name)
