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
- writes each framework out-of-memory error (gpumemtrace_framework_oom_v1,
  a FWOOM record, _OomWatch below): PyTorch's through its OOM observer,
  caught or not; PyTorch's, JAX's, TensorFlow's and CuPy's when they reach
  the top of a thread (sys.excepthook, threading.excepthook), or, when the
  program replaced those hooks, at exit (sys.last_value);
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
        self.oom_hooks = []  # more observers to attach with ours (_OomWatch)
        self.armed = False  # arm_observer done

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
        self.arm_observer(torch, cuda)
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

    def arm_observer(self, torch, cuda):
        """The observer as CUDA initializes (torch.cuda._lazy_call runs a
        callable then, or now if done), not a sampling period later: an OOM
        right after start-up is seen too. The callable never raises (one
        that does fails the program's first CUDA op)."""
        if cuda is None or self.armed:
            return
        self.armed = True
        lazy = getattr(cuda, "_lazy_call", None)

        def attach():
            try:
                self.observe(torch)
            except Exception as err:  # pylint: disable=broad-except
                self.fail(err)

        if lazy is not None:
            lazy(attach)

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
            for fn in self.oom_hooks:
                attach(fn)
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


class _OomWatch:
    """A framework's out-of-memory errors into the trace, as FWOOM records
    (include/gpumemtrace/format.h): how it was seen, the framework, the
    exception's class, the figures read at that moment, and its message;
    the reports parse the message (analysis/fwoom-msg.c). Nothing here
    imports a framework or makes a CUDA call the framework did not make
    already; its own errors never reach the program (the first is one line
    on stderr, then it stops). Which errors are caught: docs/reports.md."""

    OBSERVER, EXCEPTHOOK, THREAD, AT_EXIT = 0, 1, 2, 3  # GMT_FWOOM_*
    CHAIN_MAX = 8  # __cause__/__context__ links followed

    def __init__(self, entry, helper):
        self.entry = entry
        self.helper = helper
        self.broken = False
        self.busy = False  # a hook called from our own work
        self.done = []  # the exceptions recorded (kept: ids are reused)

    def fail(self, err):
        if not self.broken:
            self.broken = True
            try:
                sys.stderr.write("gpumemtrace: framework OOM capture stopped: %s: %s\n"
                                 % (type(err).__name__, err))
            except Exception:  # pylint: disable=broad-except
                pass

    # ---- which exceptions are out-of-memory errors ----

    @staticmethod
    def source_of(exc):
        """"torch", "jax", "tensorflow", "cupy", or None: by class name and
        module along the MRO (framework-view.md §2.1, §3.1, §4, §5)."""
        text = None
        for cls in type(exc).__mro__:
            mod = getattr(cls, "__module__", "") or ""
            top = mod.split(".")[0]
            name = cls.__name__
            if name == "OutOfMemoryError" and top in ("torch", "cupy", "cupy_backends"):
                return "cupy" if top.startswith("cupy") else "torch"
            if name == "ResourceExhaustedError" and top == "tensorflow":
                return "tensorflow"
            if name in ("JaxRuntimeError", "XlaRuntimeError") and top in ("jax", "jaxlib"):
                if getattr(exc, "error_code", None) == 8:  # RESOURCE_EXHAUSTED
                    return "jax"
                text = str(exc)[:200] if text is None else text
                return "jax" if "RESOURCE_EXHAUSTED" in text else None
            if name == "AcceleratorError" and top == "torch":
                text = str(exc)[:400] if text is None else text
                return "torch" if "out of memory" in text else None
        # PyTorch before 1.13 raised a plain RuntimeError
        if isinstance(exc, RuntimeError) and "torch" in sys.modules:
            text = str(exc)[:200] if text is None else text
            if text.lstrip().startswith(("CUDA out of memory", "[rank")) and \
                    "out of memory" in text:
                return "torch"
        return None

    def find(self, exc):
        """The out-of-memory error in exc's chain (exc, its __cause__, its
        __context__...): (source, error) or None."""
        seen = 0
        while exc is not None and seen < self.CHAIN_MAX:
            source = self.source_of(exc)
            if source:
                return source, exc
            seen += 1
            exc = exc.__cause__ or exc.__context__
        return None

    # ---- the figures read with it ----

    def torch_values(self, device=None):
        rows = self.helper.torch_stats(device)
        if len(rows) != 1:
            return {}, -1
        _, ordinal, stats = rows[0]
        return stats, ordinal

    def jax_values(self):
        """The device with the least room left (the one that failed, most
        likely) and its memory_stats()."""
        best, key = None, None
        for _, ordinal, stats in self.helper.jax_stats():
            room = stats.get("bytes_limit", 0) - stats.get("bytes_in_use", 0)
            if key is None or room < key:
                best, key = (stats, ordinal), room
        return best if best else ({}, -1)

    @staticmethod
    def tf_values(message):
        import re

        tf = sys.modules.get("tensorflow")
        m = re.search(r"device:GPU:(\d+)", message)
        if tf is None or m is None:
            return {}, -1
        n = int(m.group(1))
        out = dict(tf.config.experimental.get_memory_info("GPU:%d" % n))
        gpus = tf.config.list_physical_devices("GPU")
        confs = tf.config.get_logical_device_configuration(gpus[n]) if n < len(gpus) else None
        if confs and getattr(confs[0], "memory_limit", None):
            out["memory_limit"] = int(confs[0].memory_limit) << 20  # MiB
        return out, n

    @staticmethod
    def cupy_values():
        cupy = sys.modules.get("cupy")
        if cupy is None:
            return {}, -1
        pool = cupy.get_default_memory_pool()
        return ({"used_bytes": pool.used_bytes(), "total_bytes": pool.total_bytes(),
                 "limit": pool.get_limit()}, cupy.cuda.runtime.getDevice())

    def values_of(self, source, err):
        if source == "torch":
            return self.torch_values()
        if source == "jax":
            return self.jax_values()
        if source == "tensorflow":
            return self.tf_values(str(err))
        return self.cupy_values()

    # ---- writing ----

    def write(self, how, source, type_name, ordinal, values, message):
        import ctypes

        items = [(k, v) for k, v in values.items()
                 if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64][:32]
        names = (ctypes.c_char_p * max(len(items), 1))(
            *[str(k).encode("utf-8", "replace")[:128] for k, _ in items])
        vals = (ctypes.c_uint64 * max(len(items), 1))(*[v for _, v in items])
        self.entry(how, source.encode(), type_name.encode("utf-8", "replace")[:128],
                   ordinal, len(items), names, vals,
                   message.encode("utf-8", "replace")[:4096])

    def record(self, exc, how):
        """Records exc's out-of-memory error once, from a hook."""
        if self.broken or self.busy or exc is None:
            return
        self.busy = True
        try:
            found = self.find(exc)
            if found and not any(e is found[1] for e in self.done):
                source, err = found
                self.done.append(err)
                values, ordinal = {}, -1
                try:
                    values, ordinal = self.values_of(source, err)
                except Exception:  # pylint: disable=broad-except
                    pass  # the error and its message still go in
                cls = type(err)
                self.write(how, source, "%s.%s" % (cls.__module__, cls.__qualname__),
                           ordinal, values, str(err))
        except Exception as err:  # pylint: disable=broad-except
            self.fail(err)
        finally:
            self.busy = False

    def on_torch_oom(self, device, alloc, limit_or_total, device_free):
        """PyTorch's observer (framework-view.md §2.3): fires before the
        raise, caught or not; never raises."""
        if self.broken:
            return
        try:
            stats, _ = self.torch_values(device)
            values = {"alloc_size": alloc, "limit_or_total": limit_or_total,
                      "device_free": device_free}
            values.update(stats)
            self.write(self.OBSERVER, "torch", "", device, values, "")
        except Exception as err:  # pylint: disable=broad-except
            self.fail(err)

    # ---- the hooks (framework-view.md §6: chained, never raising) ----

    def install(self):
        import atexit
        import threading

        prev = sys.excepthook

        def excepthook(etype, value, tb):
            self.record(value, self.EXCEPTHOOK)
            prev(etype, value, tb)

        sys.excepthook = excepthook
        prev_thread = threading.excepthook

        def thread_hook(args):
            if args.exc_type is not SystemExit:  # a custom hook gets these too
                self.record(args.exc_value, self.THREAD)
            prev_thread(args)

        threading.excepthook = thread_hook
        atexit.register(self.at_exit)
        self.helper.oom_hooks.append(self.on_torch_oom)

    def at_exit(self):
        """An uncaught error whose hook was not ours (the program replaced
        sys.excepthook): the interpreter keeps it in sys.last_value."""
        exc = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        self.record(exc, self.AT_EXIT)


class _TorchWatch:
    """A meta path finder that only notices torch.cuda's import finish,
    to arm the out-of-memory observer then (torch.cuda._lazy_call), before
    the program's first CUDA call: the sampling thread would notice torch a
    period later, past an OOM right after start-up. Every other import
    passes through untouched (find_spec returns None)."""

    def __init__(self, helper):
        self.helper = helper
        self.busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch.cuda" or self.busy:
            return None
        self.busy = True
        try:
            import importlib.machinery

            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            loader = getattr(spec, "loader", None)
            run = getattr(loader, "exec_module", None)
            if run is None:
                return None
            helper = self.helper

            def exec_module(module):
                run(module)  # the import itself: its errors are the program's
                try:
                    helper.arm_observer(sys.modules.get("torch"), module)
                except Exception as err:  # pylint: disable=broad-except
                    helper.fail(err)

            loader.exec_module = exec_module
            return spec
        except Exception:  # pylint: disable=broad-except
            return None
        finally:
            self.busy = False


def _oom_entry():
    import ctypes

    try:
        entry = ctypes.CDLL(None).gpumemtrace_framework_oom_v1
    except (AttributeError, OSError):
        return None  # an older library: no such records
    entry.restype = None
    entry.argtypes = [ctypes.c_uint, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64,
                      ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
                      ctypes.POINTER(ctypes.c_uint64), ctypes.c_char_p]
    return entry


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
    oom_entry = _oom_entry()
    if oom_entry is not None:
        _OomWatch(oom_entry, helper).install()
        sys.meta_path.insert(0, _TorchWatch(helper))
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
