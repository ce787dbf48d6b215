"""Builds the package's native parts with the project's own make: the C
build stays the one build (docs/design.md, "The Python package"). The
wheel holds bin/gpumemtrace, lib/libgpumemtrace.so and
lib/libgpumemtrace-reader.so inside the gpumemtrace package; it loads no
Python extension, so one wheel serves every CPython 3 (py3-none-<platform>)."""
import os
import re
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel

ROOT = os.path.dirname(os.path.abspath(__file__))
NATIVE = [("bin", "gpumemtrace"), ("lib", "libgpumemtrace.so"), ("lib", "libgpumemtrace-reader.so")]
DEPS = ("a C compiler and make, and the development files of libunwind, elfutils (libdw, "
        "libelf), uthash and zlib: on Debian or Ubuntu, scripts/install-deps.sh, or apt-get "
        "install build-essential libunwind-dev libdw-dev libelf-dev uthash-dev zlib1g-dev")


def version():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        return re.search(r"^VERSION := (\S+)$", f.read(), re.M).group(1)


class BuildNative(build_py):
    """build_py, plus `make all` into a build folder of its own, whose
    three outputs are copied into the package."""

    def run(self):
        super().run()
        # GPUMEMTRACE_PREBUILT: a make build folder to take them from as
        # they are (the tests' wheel, packagers who built with make).
        out = os.environ.get("GPUMEMTRACE_PREBUILT")
        if not out:
            out = os.path.abspath(os.path.join(self.get_finalized_command("build").build_temp,
                                               "native"))
            self.make(out)
        for sub, name in NATIVE:
            dest = os.path.join(self.build_lib, "gpumemtrace", sub)
            os.makedirs(dest, exist_ok=True)
            shutil.copy2(os.path.join(out, name), os.path.join(dest, name))
            os.chmod(os.path.join(dest, name), 0o755)


    def make(self, out):
        jobs = os.environ.get("GPUMEMTRACE_MAKE_JOBS", "2")
        cmd = ["make", "-C", ROOT, "-j" + jobs, "BUILD=" + out, "all"]
        self.announce("building the native parts: " + " ".join(cmd), level=2)
        try:
            subprocess.run(cmd, check=True)
        except (OSError, subprocess.CalledProcessError) as err:
            raise SystemExit("gpumemtrace: building the native parts failed (%s); it needs %s"
                             % (err, DEPS)) from None


class Wheel(bdist_wheel):
    """Platform-specific (native code inside), Python-independent (ctypes)."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return ("py3", "none", super().get_tag()[2])


class NativeDistribution(Distribution):
    """Native code inside: installed to platlib, built per platform."""

    def has_ext_modules(self):
        return True


setup(version=version(), distclass=NativeDistribution,
      cmdclass={"build_py": BuildNative, "bdist_wheel": Wheel})
