"""Where the package's native parts are: installed inside the package
(gpumemtrace/bin, gpumemtrace/lib), else a source tree's build/ folder.
Each can be named by an environment variable instead."""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_TREE_BUILD = os.path.join(_HERE, os.pardir, os.pardir, "build")


def _find(env, rel, name):
    path = os.environ.get(env)
    if path:
        return path
    for cand in (os.path.join(_HERE, rel, name), os.path.join(_TREE_BUILD, name)):
        if os.path.exists(cand):
            return os.path.abspath(cand)
    return None


def cli():
    """The gpumemtrace command-line tool (GPUMEMTRACE_CLI)."""
    return _find("GPUMEMTRACE_CLI", "bin", "gpumemtrace")


def library():
    """libgpumemtrace.so, the tracer to preload (GPUMEMTRACE_LIBRARY)."""
    return _find("GPUMEMTRACE_LIBRARY", "lib", "libgpumemtrace.so")


def reader_library():
    """libgpumemtrace-reader.so, the trace reader (GPUMEMTRACE_READER_LIBRARY)."""
    return _find("GPUMEMTRACE_READER_LIBRARY", "lib", "libgpumemtrace-reader.so")


def counters_helper():
    """The framework-counters helper's folder (run --framework-counters
    puts it first on PYTHONPATH), or None."""
    path = os.path.join(_HERE, "_counters")
    return path if os.path.exists(os.path.join(path, "sitecustomize.py")) else None


def missing(what):
    return ("gpumemtrace: %s not found: this copy of the package has no native parts "
            "(install it with pip, or run make in the source tree)" % what)
