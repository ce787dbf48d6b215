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
        self.oom_hooks = []  # more observers to attach with ours (_OomWatch)
        self.armed = False  # arm_observer done
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


class _History:
    """PyTorch's allocator history into the trace (`run --framework-history`,
    GPUMEMTRACE_FRAMEWORK_HISTORY=N): the allocator's own view, as FWSNAP,
    FWTRACE and FWSEG records (include/gpumemtrace/format.h).

    - Once the program has initialised CUDA itself (torch.cuda._lazy_call,
      armed as torch.cuda is imported), and only with the native backend,
      it turns on torch.cuda.memory._record_memory_history with Python
      stacks and at most N entries (PyTorch keeps the last N).
    - At each out-of-memory (the observer, before the error is raised: the
      documented place to take a snapshot), at exit, and before the program
      itself changes the recording (its own _record_memory_history, which
      would wipe ours), it takes torch.cuda.memory._snapshot() and writes
      the entries no earlier snapshot wrote, and the segments with their
      blocks, flagging a gap where entries were dropped.
    - One thread writes every record, so a snapshot's records are never
      interleaved with another's in the file; the snapshot itself is taken
      where it happens. Nothing here raises into the program.
    """

    OOM, EXIT, CHANGE = 1, 2, 3  # GMT_FWSNAP_WHY_*
    HISTORY, PY_STACKS, NO_TIME = 1, 2, 8  # GMT_FWSNAP_*
    GAP = 1  # GMT_FWTRACE_GAP
    EXPANDABLE, SMALL = 1, 2  # GMT_FWSEG_*
    ACTIONS = {"alloc": 1, "free_requested": 2, "free_completed": 3, "segment_alloc": 4,
               "segment_free": 5, "segment_map": 6, "segment_unmap": 7, "oom": 8,
               "snapshot": 9, "annotate": 10}
    STATES = {"inactive": 0, "active_allocated": 1, "active_pending_free": 2,
              "active_awaiting_free": 2}
    BATCH = 2048  # entries or blocks a call
    MASK = (1 << 64) - 1
    TAIL = 4  # entries kept to find where the next snapshot's new ones start

    def __init__(self, lib, max_entries):
        import ctypes

        u64, vp = ctypes.c_uint64, ctypes.c_void_p
        self.f_frames = lib.gpumemtrace_fw_frames_v1
        self.f_frames.argtypes = [ctypes.c_size_t, vp, vp, vp, vp]
        self.f_snap = lib.gpumemtrace_fw_snapshot_v1
        self.f_snap.argtypes = [u64, ctypes.c_uint, ctypes.c_char_p, u64, u64, ctypes.c_size_t,
                                vp, vp]
        self.f_entries = lib.gpumemtrace_fw_entries_v1
        self.f_entries.argtypes = [u64, ctypes.c_int64, u64, ctypes.c_size_t, vp, vp]
        self.f_segment = lib.gpumemtrace_fw_segment_v1
        self.f_segment.argtypes = [u64, ctypes.c_int64, vp, vp, ctypes.c_size_t, vp, vp]
        for f in (self.f_frames, self.f_snap, self.f_entries, self.f_segment):
            f.restype = None
        self.max_entries = max_entries
        self.bound = max_entries  # the recording's bound as far as we know (0: not)
        self.owned = False  # the program set the recording up itself
        self.torch = None
        self.record = None  # PyTorch's own _record_memory_history
        self.recording = False
        self.broken = False
        self.seq = 0
        self.frames = {}  # (name, filename, line) -> PYFRAME id
        self.stacks = {}  # a stack's (name, filename, line)s -> their ids
        import operator

        self.getter = operator.itemgetter("name", "filename", "line")
        self.tails = {}  # device -> keys of the last entries written
        self.queue = None
        self.thread = None
        self.lock = None

    def fail(self, err):
        if not self.broken:
            self.broken = True
            try:
                sys.stderr.write("gpumemtrace: framework history stopped: %s: %s\n"
                                 % (type(err).__name__, err))
            except Exception:  # pylint: disable=broad-except
                pass

    # ---- starting, as torch.cuda is imported and CUDA initialised ----

    def on_torch_cuda(self, torch, cuda):
        """torch.cuda has just been imported: wrap the program's way to
        change the recording, and start ours at CUDA's initialisation."""
        memory = getattr(cuda, "memory", None)
        record = getattr(memory, "_record_memory_history", None)
        lazy = getattr(cuda, "_lazy_call", None)
        if record is None or lazy is None:
            return
        self.torch = torch
        self.record = record
        history = self

        def _record_memory_history(*args, **kwargs):
            history.before_change()
            return record(*args, **kwargs)

        for attr in ("__doc__", "__name__", "__qualname__", "__module__", "__wrapped__"):
            try:
                setattr(_record_memory_history, attr, getattr(record, attr, None))
            except Exception:  # pylint: disable=broad-except
                pass
        _record_memory_history.__wrapped__ = record
        memory._record_memory_history = _record_memory_history

        def start():
            try:
                self.start()
            except Exception as err:  # pylint: disable=broad-except
                self.fail(err)  # never raise here: the program's first CUDA op would

        lazy(start)

    def start(self):
        torch = self.torch
        memory = torch.cuda.memory
        backend = getattr(memory, "get_allocator_backend", lambda: "native")()
        if backend != "native":
            # cudaMallocAsync and pluggable allocators keep no history (they
            # raise): say so in the trace, once
            self.submit(None, 0, {"backend": backend})
            return
        if not self.owned:  # never over what the program asked for itself
            self.record(enabled="all", context="all", stacks="python",
                        max_entries=self.max_entries)
        self.recording = True
        attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)  # pylint: disable=protected-access
        if attach is not None:
            try:
                attach(self.on_oom)
            except Exception:  # pylint: disable=broad-except
                pass

    # ---- when to take a snapshot ----

    def take(self, reason):
        if self.broken or self.torch is None or not self.recording:
            return
        try:
            snap = self.torch.cuda.memory._snapshot()  # pylint: disable=protected-access
            self.submit(snap, reason)
        except Exception as err:  # pylint: disable=broad-except
            self.fail(err)

    def on_oom(self, device, alloc, limit, device_free):  # pylint: disable=unused-argument
        self.take(self.OOM)

    def before_change(self):
        """The program calls _record_memory_history itself: what we have
        goes into the trace first (turning it off, or clearing it, would
        wipe it); after the call the recording is the program's."""
        self.take(self.CHANGE)
        self.owned = True
        self.bound = 0
        self.recording = self.torch is not None and self.torch.cuda.is_initialized()

    def at_exit(self):
        self.take(self.EXIT)
        self.drain()

    # ---- the writer thread ----

    def submit(self, snap, reason, extra=None):
        import threading

        if self.queue is None or self.thread is None or not self.thread.is_alive():
            import queue

            self.queue = queue.Queue()
            self.lock = threading.Lock()
            self.thread = threading.Thread(target=self.loop, name="gpumemtrace-history",
                                           daemon=True)
            self.thread.start()
        self.queue.put((snap, reason, extra))

    def loop(self):
        while True:
            snap, reason, extra = self.queue.get()
            try:
                if not self.broken:
                    self.write(snap, reason, extra)
            except Exception as err:  # pylint: disable=broad-except
                self.fail(err)
            finally:
                self.queue.task_done()

    def drain(self, timeout=120.0):
        """Waits until every snapshot handed over is written (at exit)."""
        import time

        q = self.queue
        if q is None:
            return
        end = time.monotonic() + timeout
        while q.unfinished_tasks and not self.broken and time.monotonic() < end:
            if not self.thread.is_alive():
                break
            time.sleep(0.005)
        if q.unfinished_tasks and not self.broken:
            self.fail(RuntimeError("%d snapshot(s) not written by exit" % q.unfinished_tasks))

    def after_fork(self):
        # The writer thread is gone in the child, whose trace is a new file.
        self.queue = self.thread = None
        self.tails = {}

    # ---- one snapshot into the trace ----

    @staticmethod
    def u64(v):
        try:
            return int(v) & _History.MASK
        except (TypeError, ValueError):
            return 0

    @staticmethod
    def text(v):
        if isinstance(v, bool):
            return "True" if v else "False"
        if isinstance(v, dict):
            return ",".join("%s:%s" % (k, _History.text(x)) for k, x in v.items())
        if isinstance(v, (list, tuple)):
            return ",".join(_History.text(x) for x in v)
        return str(v)

    def frame_ids(self, frames, out):
        """Appends the PYFRAME ids of frames (innermost first) to out; a
        whole stack seen before costs one lookup."""
        try:
            key = tuple(map(self.getter, frames))
        except (KeyError, TypeError):
            key = tuple((f.get("name", ""), f.get("filename", ""), f.get("line", 0))
                        for f in frames)
        ids = self.stacks.get(key)
        if ids is None:
            ids = []
            for k in key:
                k = (k[0], k[1], self.u64(k[2]))
                fid = self.frames.get(k)
                if fid is None:
                    fid = self.name_frames([k])[0]
                ids.append(fid)
            if len(self.stacks) >= 100000:  # bounded: distinct stacks, then again
                self.stacks.clear()
            self.stacks[key] = ids
        out.extend(ids)
        return len(ids)

    def name_frames(self, keys):
        import ctypes
        from array import array

        n = len(keys)
        fn = (ctypes.c_char_p * n)(*[str(k[0]).encode("utf-8", "replace") for k in keys])
        fl = (ctypes.c_char_p * n)(*[str(k[1]).encode("utf-8", "replace") for k in keys])
        lines = array("Q", [k[2] for k in keys])
        ids = array("Q", [0] * n)
        self.f_frames(n, ctypes.addressof(fn), ctypes.addressof(fl), lines.buffer_info()[0],
                      ids.buffer_info()[0])
        for k, i in zip(keys, ids):
            self.frames[k] = i
        return list(ids)

    def settings(self, snap, extra):
        import ctypes

        pairs = [(str(k), self.text(v)) for k, v in (snap.get("allocator_settings") or {}).items()]
        pairs += [(k, self.text(v)) for k, v in (extra or {}).items()]
        pairs = pairs[:32]  # FW_SETTINGS_MAX
        keys = (ctypes.c_char_p * max(len(pairs), 1))(
            *[k.encode("utf-8", "replace") for k, _ in pairs])
        values = (ctypes.c_char_p * max(len(pairs), 1))(
            *[v.encode("utf-8", "replace") for _, v in pairs])
        return len(pairs), keys, values

    def key(self, e):
        addr = e.get("device_free", 0) if e.get("action") == "oom" else e.get("addr", 0)
        return (e.get("action"), addr, e.get("size"), e.get("stream"), e.get("time_us"))

    def new_entries(self, device, entries):
        """The index of the first entry no earlier snapshot wrote, and
        whether entries before it may be missing."""
        tail = self.tails.get(device)
        n = len(entries)
        # a full history may have dropped some; one the program set up, we
        # cannot tell
        start, gap = 0, n >= self.bound if self.bound else True
        if tail:
            gap = True
            k = len(tail)
            for i in range(n - 1, k - 2, -1):
                if self.key(entries[i]) == tail[-1] and \
                        [self.key(e) for e in entries[i - k + 1:i + 1]] == tail:
                    start, gap = i + 1, False
                    break
        if n:
            self.tails[device] = [self.key(e) for e in entries[max(n - self.TAIL, 0):]]
        return start, gap

    def write(self, snap, reason, extra=None):
        import ctypes

        self.seq += 1
        seq = self.seq
        if snap is None:  # no history: only what we know of why
            n, keys, values = self.settings({}, extra)
            self.f_snap(seq, reason, b"torch", 0, 0, n, ctypes.addressof(keys),
                        ctypes.addressof(values))
            return
        traces = snap.get("device_traces") or []
        flags = self.HISTORY
        if any(e.get("frames") for t in traces for e in t[:8]):
            flags |= self.PY_STACKS
        if any(e.get("time_us") is None for t in traces for e in t[:1]):
            flags |= self.NO_TIME
        n, keys, values = self.settings(snap, extra)
        self.f_snap(seq, reason, b"torch", flags, self.bound, n, ctypes.addressof(keys),
                    ctypes.addressof(values))
        for device, entries in enumerate(traces):
            start, gap = self.new_entries(device, entries)
            for at in range(start, len(entries), self.BATCH):
                self.write_entries(seq, device, self.GAP if gap and at == start else 0,
                                   entries[at:at + self.BATCH])
        for seg in snap.get("segments") or []:
            self.write_segment(seq, seg)

    def write_entries(self, seq, device, flags, entries):
        from array import array

        vals, frames = [], []
        u64, actions = self.u64, self.ACTIONS
        for e in entries:
            action = actions.get(e.get("action"), 0)
            addr = e.get("device_free", 0) if action == 8 else e.get("addr", 0)
            nf = self.frame_ids(e.get("frames") or (), frames)
            vals += (action, u64(addr), u64(e.get("size", 0)), u64(e.get("stream", 0)),
                     u64(e.get("time_us") or 0), nf)
        v, f = array("Q", vals), array("Q", frames or [0])
        self.f_entries(seq, device, flags, len(entries), v.buffer_info()[0], f.buffer_info()[0])

    def write_segment(self, seq, seg):
        from array import array

        u64 = self.u64
        pool = seg.get("segment_pool_id") or (0, 0)
        if not isinstance(pool, (tuple, list)) or len(pool) != 2:
            pool = (0, 0)
        flags = (self.EXPANDABLE if seg.get("is_expandable") else 0) | \
            (self.SMALL if seg.get("segment_type") == "small" else 0)
        seg_frames = []
        nsf = self.frame_ids(seg.get("frames") or (), seg_frames)
        head = array("Q", [u64(seg.get("address", 0)), u64(seg.get("total_size", 0)),
                           u64(seg.get("stream", 0)), flags, u64(pool[0]), u64(pool[1]), nsf])
        sf = array("Q", seg_frames or [0])
        blocks = seg.get("blocks") or []
        at = u64(seg.get("address", 0))
        for i in range(0, max(len(blocks), 1), self.BATCH):
            vals, frames = [], []
            part = blocks[i:i + self.BATCH]
            for b in part:
                addr = u64(b["address"]) if "address" in b else at  # older: blocks tile it
                size = u64(b.get("size", 0))
                at = addr + size
                nf = self.frame_ids(b.get("frames") or (), frames)
                vals += (addr, size, u64(b.get("requested_size", 0)),
                         self.STATES.get(b.get("state"), 3), nf)
            v, f = array("Q", vals or [0]), array("Q", frames or [0])
            head[3] = flags | (4 if i else 0)  # GMT_FWSEG_CONTINUED
            self.f_segment(seq, seg.get("device", 0), head.buffer_info()[0], sf.buffer_info()[0],
                           len(part), v.buffer_info()[0], f.buffer_info()[0])


class _TorchCudaWatch:
    """A meta path finder that notices only torch.cuda's import finishing,
    and then calls each of its callbacks with (torch, torch.cuda): before
    the program's first CUDA call, so what they arm (torch.cuda._lazy_call)
    runs as CUDA initialises. Every other import passes through untouched
    (find_spec returns None); a callback's error never reaches the import."""

    def __init__(self, on_error):
        self.callbacks = []
        self.on_error = on_error
        self.busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch.cuda" or self.busy or not self.callbacks:
            return None
        self.busy = True
        try:
            import importlib.machinery

            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            loader = getattr(spec, "loader", None)
            run = getattr(loader, "exec_module", None)
            if run is None:
                return None
            watch = self

            def exec_module(module):
                run(module)  # the import itself: its errors are the program's
                for fn in watch.callbacks:
                    try:
                        fn(sys.modules.get("torch"), module)
                    except Exception as err:  # pylint: disable=broad-except
                        watch.on_error(err)

            loader.exec_module = exec_module
            return spec
        except Exception:  # pylint: disable=broad-except
            return None
        finally:
            self.busy = False


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


def _install_history(lib, watch):
    """`run --framework-history`: GPUMEMTRACE_FRAMEWORK_HISTORY holds the
    history's bound (entries). `watch`: the one torch.cuda import watch."""
    value = os.environ.get("GPUMEMTRACE_FRAMEWORK_HISTORY")
    if not value:
        return
    try:
        max_entries = max(int(value), 1)
    except ValueError:
        max_entries = 100000
    if getattr(lib, "gpumemtrace_fw_entries_v1", None) is None:
        return  # an older library
    history = _History(lib, max_entries)
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "cuda", None) is not None:
        history.on_torch_cuda(torch, torch.cuda)  # imported before us (a usercustomize)
    else:
        watch.callbacks.append(history.on_torch_cuda)
    import atexit

    atexit.register(history.at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=history.after_fork)


def _offer_readings(helper):
    """The pytest plugin takes a reading at each test's start and end (its
    per-test reserved figure: gpumemtrace/pytest_plugin.py): this helper
    is not importable by name (it is the interpreter's sitecustomize, or
    chained away from it), so it offers reading() as the module
    _gpumemtrace_counters. Never raises (guarded)."""
    import types

    mod = types.ModuleType("_gpumemtrace_counters")
    mod.reading = lambda: helper.guarded(helper.PERIODIC)
    sys.modules["_gpumemtrace_counters"] = mod


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
    # one watch of torch.cuda's import: a spec found by one finder hides
    # torch.cuda from any later one
    watch = _TorchCudaWatch(helper.fail)
    oom_entry = _oom_entry()
    if oom_entry is not None:
        _OomWatch(oom_entry, helper).install()
        watch.callbacks.append(helper.arm_observer)
    helper.start()
    _offer_readings(helper)
    import atexit

    atexit.register(helper.guarded, helper.END)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=helper.after_fork)
    _install_history(ctypes.CDLL(None), watch)
    if watch.callbacks:
        sys.meta_path.insert(0, watch)


_self = sys.modules.get(__name__)
try:
    _install()
except Exception as _err:  # pylint: disable=broad-except
    sys.stderr.write("gpumemtrace: framework counters not started: %s\n" % _err)
_chain()
