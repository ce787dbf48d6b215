"""A Jupyter kernel under the tracer.

    python -m gpumemtrace kernel install [--name NAME] [--display-name TEXT]
                                         [--user | --sys-prefix | --prefix DIR]
                                         [--framework-counters] [--replace]

adds a kernel spec whose kernel is this Python's ipykernel, started by
`python -m gpumemtrace kernel launch`: that sets LD_PRELOAD to the
package's libgpumemtrace.so (the tracer must be loaded before CUDA starts)
and then becomes the ipykernel (exec: the same process, so Jupyter's
interrupts and restarts reach the kernel). Only that kernel is traced,
never the notebook server. Its trace is gpumemtrace.PID.gmt in the
notebook's folder (GPUMEMTRACE_OUTPUT, as for `gpumemtrace run`).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

from . import _paths

DEFAULT_NAME = "gpumemtrace"
_LAUNCH = ["-m", "gpumemtrace", "kernel", "launch"]


def _say(text):
    sys.stderr.write("gpumemtrace kernel: %s\n" % text)


def _spec(name, display, counters):
    argv = [sys.executable] + _LAUNCH
    if counters:
        argv.append("--framework-counters")
    argv += ["-f", "{connection_file}"]
    return {"argv": argv, "display_name": display, "language": "python",
            "interrupt_mode": "signal",
            "metadata": {"gpumemtrace": {"name": name, "debugger": False}}}


def _install(args):
    try:
        from jupyter_client.kernelspec import KernelSpecManager  # pylint: disable=import-outside-toplevel
    except ImportError:
        _say("jupyter_client is not installed in %s (pip install ipykernel)" % sys.executable)
        return 3
    try:
        import ipykernel  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        _say("ipykernel is not installed in %s: the kernel would not start "
             "(pip install ipykernel)" % sys.executable)
        return 3
    if _paths.library() is None:
        _say(_paths.missing("libgpumemtrace.so"))
        return 3
    name = args.name.lower()
    if not name or any(c not in "abcdefghijklmnopqrstuvwxyz0123456789-._" for c in name):
        _say("--name %r: letters, digits, '-', '.' and '_' only" % args.name)
        return 2
    prefix = args.prefix
    if args.sys_prefix:
        prefix = sys.prefix
    ksm = KernelSpecManager()
    user = args.user and not prefix
    try:
        dest = ksm._get_destination_dir(name, user=user, prefix=prefix)  # pylint: disable=protected-access
    except (AttributeError, TypeError):  # jupyter_client before 7
        root = (os.path.join(prefix, "share", "jupyter", "kernels") if prefix
                else ksm.user_kernel_dir if user
                else os.path.join(__import__("jupyter_core.paths").paths.SYSTEM_JUPYTER_PATH[0],
                                  "kernels"))
        dest = os.path.join(root, name)
    if os.path.exists(os.path.join(dest, "kernel.json")) and not args.replace:
        _say("a kernel spec named %r exists already in %s: --replace to overwrite it, or "
             "--name to add another" % (name, dest))
        return 1
    display = args.display_name or "Python %d (gpumemtrace)" % sys.version_info[0]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "kernel.json"), "w", encoding="utf-8") as f:
            json.dump(_spec(name, display, args.framework_counters), f, indent=1)
            f.write("\n")
        # the logos of ipykernel's own spec, where it has them
        try:
            from ipykernel.kernelspec import RESOURCES  # pylint: disable=import-outside-toplevel

            for logo in ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg"):
                if os.path.exists(os.path.join(RESOURCES, logo)):
                    shutil.copy(os.path.join(RESOURCES, logo), tmp)
        except ImportError:
            pass
        try:
            path = ksm.install_kernel_spec(tmp, name, user=args.user and not prefix,
                                           replace=True, prefix=prefix)
        except OSError as err:
            _say("cannot install the kernel spec: %s (--user installs into your home)" % err)
            return 3
    print("Installed kernel spec %s (%s) in %s" % (name, display, path))
    return 0


def _launch(args):
    """Becomes the ipykernel, with the tracer preloaded."""
    lib = _paths.library()
    env = os.environ
    if lib is None:
        _say(_paths.missing("libgpumemtrace.so") + "; the kernel starts untraced")
    else:
        old = env.get("LD_PRELOAD", "")
        if lib not in old.split(":"):
            env["LD_PRELOAD"] = lib + (":" + old if old else "")
        env.setdefault("NVTX_INJECTION64_PATH", lib)
        out = env.get("GPUMEMTRACE_OUTPUT") or "gpumemtrace.%p.gmt"
        env["GPUMEMTRACE_OUTPUT"] = os.path.abspath(out)
        if args.framework_counters:
            helper = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_counters")
            old = env.get("PYTHONPATH", "")
            env["PYTHONPATH"] = helper + (":" + old if old else "")
    argv = [sys.executable, "-m", "ipykernel_launcher"] + args.rest
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, argv, env)
    except OSError as err:
        _say("cannot start %s: %s" % (sys.executable, err))
        return 126
    return 0  # not reached


def main(argv):
    p = argparse.ArgumentParser(prog="python -m gpumemtrace kernel",
                                description="A Jupyter kernel whose process is traced.")
    sub = p.add_subparsers(dest="what")
    i = sub.add_parser("install", help="add the kernel spec")
    i.add_argument("--name", default=DEFAULT_NAME, help="the spec's name (default %(default)s)")
    i.add_argument("--display-name", help="as Jupyter lists it (default 'Python 3 (gpumemtrace)')")
    where = i.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for you alone (~/.local/share/jupyter)")
    where.add_argument("--sys-prefix", action="store_true",
                       help="into this Python's environment (sys.prefix)")
    where.add_argument("--prefix", help="under PREFIX/share/jupyter/kernels")
    i.add_argument("--framework-counters", action="store_true",
                   help="also record the framework's own counters, as run --framework-counters")
    i.add_argument("--replace", action="store_true", help="overwrite a spec of that name")
    sub.add_parser("launch", help="(used by the kernel spec) start the traced ipykernel")
    if argv[:1] == ["launch"]:  # its arguments are ipykernel's
        rest = [a for a in argv[1:] if a != "--framework-counters"]
        return _launch(argparse.Namespace(framework_counters="--framework-counters" in argv[1:],
                                          rest=rest))
    args = p.parse_args(argv)
    if args.what == "install":
        return _install(args)
    p.print_usage(sys.stderr)
    return 2
