"""gpumemtrace's framework-counters helper (`gpumemtrace run --framework-counters`).

`run` prepends this folder to PYTHONPATH, so the interpreter imports this
file as its sitecustomize. It:
- runs the sitecustomize the interpreter would have run without us (the next
  one on sys.path), so a program's own still runs;
- never imports a framework: a daemon thread watches sys.modules, and reads
  a framework's counters only once the program has imported it and the
  framework has set up its GPU runtime itself (reading earlier could create
  a CUDA context, which costs device memory);
- writes PyTorch's torch.cuda.memory_stats(), JAX's device.memory_stats()
  and TensorFlow's tf.config.experimental.get_memory_info() into the trace
  (gpumemtrace_counters_v1, a COUNTERS record) every GPUMEMTRACE_SAMPLE_MS,
  at each PyTorch out-of-memory (its OOM observer), and at exit;
- does nothing when the tracer is not loaded; its own errors never reach the
  program: the first is one line on stderr, then it stops.
"""
import os
import sys


def _chain():
    """Imports the next sitecustomize on sys.path in our place: it becomes
    sys.modules["sitecustomize"], as without us. (With none, this module
    stays there: the import of this module needs an entry.)"""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules["sitecustomize"] = _self
        raise  # site.py reports it as it would have without us


class _Helper:
    # Reasons, as include/gpumemtrace/format.h numbers them.
    PERIODIC, OOM, START, END = 0, 1, 2, 3

    def __init__(self, entry):
        self.entry = entry
        self.broken = False
        self.seen = set()  # frameworks sampled once (START written)
        self.observed = False
        ms = os.environ.get("GPUMEMTRACE_SAMPLE_MS", "100")
        try:
            ms = int(ms)
        except ValueError:
            ms = 100
        self.period = min(max(ms, 0), 60000) / 1000.0
        self.lock = None
        self.names = {}  # counter names -> their ctypes array

    def fail(self, err):
        if not self.broken:
            self.broken = True
            try:
                sys.stderr.write(
                    "gpumemtrace: framework counters stopped: %s: %s\n" % (type(err).__name__, err))
            except Exception:  # pylint: disable=broad-except
                pass

    def write(self, reason, source, device, ordinal, stats):
        import ctypes

        items = [(k, v) for k, v in stats.items()
                 if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64]
        items = items[:64]  # GMT_COUNTERS_MAX
        key = tuple(k for k, _ in items)
        names = self.names.get(key)  # the same names every reading: encoded once
        if names is None:
            names = (ctypes.c_char_p * max(len(items), 1))(
                *[str(k).encode("utf-8", "replace")[:128] for k in key])
            self.names[key] = names
        values = (ctypes.c_uint64 * max(len(items), 1))(*[v for _, v in items])
        self.entry(reason, source.encode(), device.encode(), ordinal, len(items), names, values)

    # ---- one reader per framework: [(device name, ordinal, stats)] ----

    @staticmethod
    def ready(name):
        """The module, once the program's own import of it has finished."""
        mod = sys.modules.get(name)
        spec = getattr(mod, "__spec__", None)
        if mod is None or getattr(spec, "_initializing", False):
            return None
        return mod

    def torch_stats(self, device=None):
        torch = self.ready("torch")
        cuda = getattr(torch, "cuda", None) if torch else None
        # Not initialized: no context yet, and we must not make one.
        if cuda is None or not cuda.is_initialized():
            return []
        self.observe(torch)
        devs = range(cuda.device_count()) if device is None else [device]
        out = []
        for d in devs:
            stats = cuda.memory_stats(d)
            keep = {k: v for k, v in stats.items() if k.endswith(".all.current")
                    or k.endswith(".all.peak") or k.startswith("num_")}
            out.append(("cuda:%d" % d, d, keep))
        return out

    def jax_stats(self):
        if self.ready("jax") is None:
            return []
        xb = sys.modules.get("jax._src.xla_bridge")
        # jax.devices() would start the backends (and preallocate): only
        # once the program has.
        if xb is None or not getattr(xb, "_backends", None):
            return []
        out = []
        for backend in list(xb._backends.values()):  # pylint: disable=protected-access
            for d in backend.local_devices():
                stats = d.memory_stats()
                if stats:
                    ordinal = getattr(d, "local_hardware_id", None)
                    out.append(("%s:%d" % (d.platform, d.id),
                                d.id if ordinal is None else ordinal, stats))
        return out

    def tf_stats(self):
        tf = self.ready("tensorflow")
        ctx_mod = sys.modules.get("tensorflow.python.eager.context")
        if tf is None or ctx_mod is None:
            return []
        ctx = ctx_mod.context_safe()
        # Not initialized: listing devices would create them (and take memory).
        if ctx is None or not getattr(ctx, "_initialized", False):
            return []
        out = []
        for i, dev in enumerate(tf.config.list_logical_devices("GPU")):
            out.append((dev.name.replace("/device:", "").lower(), i,
                        tf.config.experimental.get_memory_info(dev.name)))
        return out

    def sample(self, reason):
        for source, fn in (("torch", self.torch_stats), ("jax", self.jax_stats),
                           ("tensorflow", self.tf_stats)):
            if self.ready(source) is None:
                continue
            rows = fn()
            why = reason
            if rows and source not in self.seen:
                self.seen.add(source)
                why = self.START if reason == self.PERIODIC else reason
            for device, ordinal, stats in rows:
                self.write(why, source, device, ordinal, stats)

    def guarded(self, reason):
        if self.broken:
            return
        try:
            with self.lock:
                self.sample(reason)
        except Exception as err:  # pylint: disable=broad-except
            self.fail(err)

    def observe(self, torch):
        """PyTorch's out-of-memory observer, once its allocator is set up."""
        if self.observed:
            return
        self.observed = True
        attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)  # pylint: disable=protected-access
        if attach is None:
            return

        def on_oom(device, alloc, device_allocated, device_free):  # pylint: disable=unused-argument
            if self.broken:
                return
            try:
                for dev, ordinal, stats in self.torch_stats(device):
                    self.write(self.OOM, "torch", dev, ordinal, stats)
            except Exception as err:  # pylint: disable=broad-except
                self.fail(err)

        try:
            attach(on_oom)
        except Exception:  # pylint: disable=broad-except
            pass  # a backend without observers (cudaMallocAsync): periodic readings only

    def loop(self):
        import time

        while not self.broken:
            time.sleep(self.period or 1.0)
            if self.period:
                self.guarded(self.PERIODIC)
            elif not self.seen:
                self.guarded(self.START)  # period 0: start, OOMs and the end only

    def start(self):
        import threading

        self.lock = threading.RLock()
        t = threading.Thread(target=self.loop, name="gpumemtrace-counters", daemon=True)
        t.start()

    def after_fork(self):
        # The thread is gone in the child: start another. The child's
        # allocator keeps the observer (it is the parent's memory image).
        try:
            self.seen = set()
            self.start()
        except Exception as err:  # pylint: disable=broad-except
            self.fail(err)


def _install():
    import ctypes

    try:
        entry = ctypes.CDLL(None).gpumemtrace_counters_v1
    except (AttributeError, OSError):
        return  # not traced: nothing to write to
    entry.restype = None
    entry.argtypes = [ctypes.c_uint, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64,
                      ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
                      ctypes.POINTER(ctypes.c_uint64)]
    helper = _Helper(entry)
    helper.start()
    import atexit

    atexit.register(helper.guarded, helper.END)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=helper.after_fork)


_self = sys.modules.get(__name__)
try:
    _install()
except Exception as _err:  # pylint: disable=broad-except
    sys.stderr.write("gpumemtrace: framework counters not started: %s\n" % _err)
_chain()
