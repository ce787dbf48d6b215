"""Checks the stand-ins' API shape (tests/python/standins) against the real
frameworks, for t-api-standin-shapes: argv[1] is the framework (torch, jax,
tensorflow, cupy), argv[2] the stand-ins' folder. Run by an interpreter
where the real package is installed (CPU builds import without a GPU). Exit
0: the shapes agree; 77: the package is not installed (the last line says
why); 1: a difference, one line each. What is compared is what the helper
(python/gpumemtrace/_counters/sitecustomize.py) relies on: names, exception
classes (module, qualname, bases), message forms, memory_stats keys; and
that the helper classifies the real exception as the framework's OOM."""
import importlib
import importlib.util
import os
import sys

fw, standins = sys.argv[1], sys.argv[2]
problems = []


def same(what, real, ours):
    if real != ours:
        problems.append("%s: real %r, stand-in %r" % (what, real, ours))


def real_module(name):
    try:
        return importlib.import_module(name)
    except Exception as err:  # pylint: disable=broad-except
        print("%s is not importable here (%s: %s)" % (name, type(err).__name__, err))
        sys.exit(77)


PACKAGES = {"torch": ["torch"], "jax": ["jax", "jaxlib"], "tensorflow": ["tensorflow"],
            "cupy": ["cupy", "cupy_backends"]}


def standin(name):
    """The stand-in package `name` and its modules, imported apart from the
    real ones (sys.modules is put back after)."""
    tops = PACKAGES[name]

    def ours(k):
        return any(k == t or k.startswith(t + ".") for t in tops)

    saved = {k: v for k, v in sys.modules.items() if ours(k)}
    for k in saved:
        del sys.modules[k]
    sys.path.insert(0, standins)
    try:
        mod = importlib.import_module(name)
        loaded = {k: v for k, v in sys.modules.items() if ours(k)}
    finally:
        sys.path.remove(standins)
        for k in [k for k in sys.modules if ours(k)]:
            del sys.modules[k]
        sys.modules.update(saved)
    return mod, loaded


def cls_shape(c):
    return (c.__module__, c.__qualname__, [b.__name__ for b in c.__mro__[1:]])


def helper_module():
    """The helper, loaded apart (untraced: it installs nothing)."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "python", "gpumemtrace", "_counters",
                        "sitecustomize.py")
    spec = importlib.util.spec_from_file_location("gmt_helper_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    os.environ["GPUMEMTRACE_SAMPLE_MS"] = "0"
    saved = sys.modules.get("sitecustomize")
    spec.loader.exec_module(mod)  # untraced: it installs nothing
    if saved is not None:
        sys.modules["sitecustomize"] = saved
    return mod


def helper_source(exc):
    """What the helper's _OomWatch says the exception is."""
    return helper_module()._OomWatch.source_of(exc)  # pylint: disable=protected-access


def torch_sources():
    """The folder of an installed torch whose import fails (PyPI's wheel is
    the CUDA build: it needs the nvidia-* wheels' libraries), or
    GMT_TORCH_SRC (an unpacked wheel's folder holding torch/). None: none."""
    root = os.environ.get("GMT_TORCH_SRC")
    if root:
        return os.path.join(root, "torch")
    spec = importlib.util.find_spec("torch")  # finds it, runs nothing
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def defs(path):
    """Top-level functions, classes and assignments of a Python file, by
    name: (kind, parameter names or bases or the assigned source)."""
    import ast
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            a = node.args
            out[node.name] = ("def", [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs])
        elif isinstance(node, ast.ClassDef):
            out[node.name] = ("class", [ast.unparse(b) for b in node.bases])
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = ("=", ast.unparse(node.value))
    return out


def check_torch_sources(src):
    """Without importing torch: the stand-in's functions against the real
    ones' definitions in the sources (every parameter the stand-in takes
    exists in the real one), the exception's class in the _C stub, the
    observer's binding name, and _memory_viz.py's presence."""
    import inspect
    ours, mods = standin("torch")
    memory = defs(os.path.join(src, "cuda", "memory.py"))
    cuda = defs(os.path.join(src, "cuda", "__init__.py"))
    # _record_memory_history is (enabled, *args, **kwargs) forwarding to _impl
    memory["_record_memory_history"] = memory.get("_record_memory_history_impl")
    ours_memory = getattr(ours.cuda, "memory", None) or mods.get("torch._memory")
    for where, real, mod, names in (
            ("torch.cuda.memory", memory, ours_memory,
             ("_record_memory_history", "_snapshot", "_dump_snapshot", "get_allocator_backend",
              "memory_stats", "set_per_process_memory_fraction")),
            ("torch.cuda", cuda, ours.cuda, ("_lazy_call", "is_initialized"))):
        for name in names:
            fn = getattr(mod, name, None) or getattr(ours.cuda, name, None)
            if fn is None:
                problems.append("%s.%s: the stand-in lacks it" % (where, name))
                continue
            if name not in real or real[name] is None or real[name][0] != "def":
                problems.append("%s.%s: not a function in the real sources" % (where, name))
                continue
            extra = [p for p in inspect.signature(fn).parameters
                     if p not in real[name][1] and p not in ("args", "kwargs")]
            same("%s.%s: stand-in parameters the real one lacks" % (where, name), [], extra)
    same("torch.cuda.OutOfMemoryError", cuda.get("OutOfMemoryError"),
         ("=", "torch._C.OutOfMemoryError"))
    stub = defs(os.path.join(src, "_C", "__init__.pyi"))
    same("torch._C.OutOfMemoryError bases", stub.get("OutOfMemoryError"), ("class", ["RuntimeError"]))
    same("OutOfMemoryError bases (stand-in)", [b.__name__ for b in ours.OutOfMemoryError.__bases__],
         ["RuntimeError"])
    with open(os.path.join(src, "_dynamo", "trace_rules.py"), encoding="utf-8") as f:
        same("the observer's binding is named in torch", "_cuda_attach_out_of_memory_observer"
             in f.read(), True)
    same("torch/cuda/_memory_viz.py exists",
         os.path.exists(os.path.join(src, "cuda", "_memory_viz.py")), True)
    check_history_sources(src, ours_memory)
    print("note: torch checked from its sources (%s); its import needs CUDA libraries" % src)


def check_history_sources(src, ours_memory):
    """The allocator history (run --framework-history) against torch's own
    sources, importable or not: the stand-in's _record_memory_history
    defaults are the real one's (programs call it with defaults), the
    keywords the helper passes exist, every trace action and block state of
    _snapshot's documented shape is one the helper names, and the keys the
    helper reads are torch's own (that docstring's TypedDicts, or
    _memory_viz.py, torch's reader of them). Keys only C++ emits (time_us,
    is_expandable, allocator_settings, active_pending_free) are in no
    Python source: framework-view.md §1.2 has them from the C++."""
    import ast
    import inspect
    import re
    path = os.path.join(src, "cuda", "memory.py")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    tree = ast.parse(text, path)
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    impl = fns.get("_record_memory_history_impl") or fns.get("_record_memory_history")
    if impl is None:
        problems.append("torch.cuda.memory: no _record_memory_history")
        return
    pos = impl.args.args
    real = dict(zip([a.arg for a in pos[len(pos) - len(impl.args.defaults):]],
                    [ast.unparse(d) for d in impl.args.defaults]))
    for name, p in inspect.signature(ours_memory._record_memory_history).parameters.items():  # pylint: disable=protected-access
        if p.default is inspect.Parameter.empty or name not in real:
            continue  # a missing one is check_torch_sources' line
        ours = "sys.maxsize" if p.default == sys.maxsize and name == "max_entries" else repr(p.default)
        same("_record_memory_history's %s default" % name, real[name].replace('"', "'"), ours)
    for name in ("enabled", "context", "stacks", "max_entries"):  # the helper's own call
        same("_record_memory_history takes %s" % name, name in real, True)
    doc = (ast.get_docstring(fns["_snapshot"]) if "_snapshot" in fns else None) or ""

    def literal(field):
        m = re.search(r"\b%s: Literal\[(.*?)\]" % field, doc, re.S)
        return re.findall(r'"(\w+)"', re.sub(r"#[^\n]*", "", m.group(1))) if m else None

    helper = helper_module()._History  # pylint: disable=protected-access
    actions = literal("action")
    same("_snapshot's documented TraceEntry actions", actions is not None, True)
    header = os.path.join(src, "include", "c10", "core", "CachingDeviceAllocator.h")
    if os.path.exists(header):  # an installed wheel has the C++ parser's own table
        with open(header, encoding="utf-8") as f:
            m = re.search(r"kActionTable\[\] = \{(.*?)\};", f.read(), re.S)
        actions = (actions or []) + (re.findall(r'\{"(\w+)"', m.group(1)) if m else [])
    for what, names, known in (("trace action", actions, helper.ACTIONS),
                               ("block state", literal("state"), helper.STATES)):
        for name in names or ():
            if name not in known:
                problems.append("torch's %s %r: the helper does not name it" % (what, name))
    with open(os.path.join(src, "cuda", "_memory_viz.py"), encoding="utf-8") as f:
        viz = f.read()
    for key in ("device_traces", "segments", "blocks", "frames", "action", "addr", "size",
                "stream", "device_free", "address", "total_size", "requested_size", "state",
                "segment_type", "segment_pool_id", "filename", "line", "name", "device"):
        same("the snapshot key %r in torch's sources" % key,
             bool(re.search(r"[\"']%s[\"']|^ +%s: " % (key, key), doc + "\n" + viz, re.M)),
             True)


def check_torch():
    try:
        torch = importlib.import_module("torch")
    except Exception as err:  # pylint: disable=broad-except
        src = torch_sources()
        if src is None:
            print("torch is not importable here (%s: %s)" % (type(err).__name__, err))
            sys.exit(77)
        check_torch_sources(src)
        return
    same("torch.OutOfMemoryError is torch.cuda.OutOfMemoryError",
         torch.OutOfMemoryError is torch.cuda.OutOfMemoryError, True)
    ours, _ = standin("torch")
    same("OutOfMemoryError class", cls_shape(torch.OutOfMemoryError),
         cls_shape(ours.OutOfMemoryError))
    for name in ("is_initialized", "device_count", "memory_stats", "_lazy_call",
                 "set_per_process_memory_fraction"):
        same("torch.cuda.%s exists" % name, hasattr(torch.cuda, name),
             hasattr(ours.cuda, name))
    same("memory_stats() before CUDA init", torch.cuda.memory_stats() if
         not torch.cuda.is_available() else {}, {})
    if hasattr(torch._C, "_cuda_attach_out_of_memory_observer"):  # pylint: disable=protected-access
        same("the observer's binding", True,
             hasattr(ours._C, "_cuda_attach_out_of_memory_observer"))  # pylint: disable=protected-access
    else:
        print("note: this torch build has no _cuda_attach_out_of_memory_observer (a CPU build)")
    _, mods = standin("torch")
    check_history_sources(os.path.dirname(torch.__file__), mods["torch._memory"])
    same("helper: torch OOM", helper_source(torch.OutOfMemoryError("CUDA out of memory. Tried "
                                                                    "to allocate 2.00 MiB")),
         "torch")


def check_jax():
    jax = real_module("jax")
    import jax.numpy as jnp  # noqa: F401

    real = jax.errors.JaxRuntimeError
    ours, mods = standin("jax")
    same("JaxRuntimeError class", cls_shape(real), cls_shape(mods["jax.errors"].JaxRuntimeError))
    for prop in ("error_code", "error_code_string", "error_message"):
        same("JaxRuntimeError.%s" % prop, hasattr(real, prop),
             hasattr(mods["jax.errors"].JaxRuntimeError, prop))
    same("jax._src.xla_bridge._backends", hasattr(importlib.import_module(
        "jax._src.xla_bridge"), "_backends"), hasattr(mods["jax._src.xla_bridge"], "_backends"))
    try:  # a real out-of-memory error, from the CPU client (framework-view.md §3.1)
        jax.device_put(jnp.zeros(1)).block_until_ready()
        jnp.zeros(1 << 62, dtype=jnp.uint8).block_until_ready()
        problems.append("jax: a 4 EiB array did not fail")
    except real as err:
        same("a real OOM's error_code", err.error_code, 8)
        same("a real OOM's code string", err.error_code_string, "RESOURCE_EXHAUSTED")
        same("helper: jax's real OOM", helper_source(err), "jax")
    except Exception as err:  # pylint: disable=broad-except
        problems.append("jax: the 4 EiB array raised %s: %s" % (type(err).__name__, err))
    stats = jax.devices()[0].memory_stats()
    same("CPU memory_stats() (None where not implemented)", stats is None or
         isinstance(stats, dict), True)


def check_tensorflow():
    tf = real_module("tensorflow")
    ours, mods = standin("tensorflow")
    same("ResourceExhaustedError class", cls_shape(tf.errors.ResourceExhaustedError),
         cls_shape(mods["tensorflow.errors"].ResourceExhaustedError))
    err = tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor with "
                                           "shape[8] and type float on /job:localhost/replica:0"
                                           "/task:0/device:GPU:0 by allocator GPU_0_bfc")
    same("helper: tf OOM", helper_source(err), "tensorflow")
    for name in ("list_physical_devices", "get_logical_device_configuration",
                 "set_logical_device_configuration", "list_logical_devices"):
        same("tf.config.%s exists" % name, hasattr(tf.config, name),
             hasattr(ours.config, name))
    same("LogicalDeviceConfiguration has memory_limit",
         "memory_limit" in tf.config.LogicalDeviceConfiguration._fields,  # pylint: disable=protected-access
         "memory_limit" in ours.config.LogicalDeviceConfiguration._fields)  # pylint: disable=protected-access
    same("get_memory_info exists", hasattr(tf.config.experimental, "get_memory_info"),
         hasattr(ours.config.experimental, "get_memory_info"))
    ctx = importlib.import_module("tensorflow.python.eager.context")
    same("context.context_safe exists", hasattr(ctx, "context_safe"),
         hasattr(mods["tensorflow.python.eager.context"], "context_safe"))


def check_cupy():
    cupy = real_module("cupy")
    ours, mods = standin("cupy")
    same("OutOfMemoryError class", cls_shape(cupy.cuda.memory.OutOfMemoryError),
         cls_shape(mods["cupy.cuda.memory"].OutOfMemoryError))
    same("its message", str(cupy.cuda.memory.OutOfMemoryError(1 << 30, 5 << 30, 8 << 30)),
         str(mods["cupy.cuda.memory"].OutOfMemoryError(1 << 30, 5 << 30, 8 << 30)))


{"torch": check_torch, "jax": check_jax, "tensorflow": check_tensorflow,
 "cupy": check_cupy}[fw]()
for p in problems:
    print("DIFF " + p)
print("%s: %s" % (fw, "shapes agree" if not problems else "%d differences" % len(problems)))
sys.exit(1 if problems else 0)
