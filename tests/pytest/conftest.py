"""Shared fixtures of the Python package's tests (tests/pytest), which
t-py-pytest runs: the build's CLI and libraries, the simulated CUDA and the
test programs, all from the variables tests/run.sh exports."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("GPUMEMTRACE_CLI", os.path.join(BUILD, "gpumemtrace"))
os.environ.setdefault("GPUMEMTRACE_LIBRARY", os.path.join(BUILD, "libgpumemtrace.so"))
os.environ.setdefault("GPUMEMTRACE_READER_LIBRARY", os.path.join(BUILD, "libgpumemtrace-reader.so"))


class Env:
    root = ROOT
    build = BUILD
    cli = os.environ["GPUMEMTRACE_CLI"]
    lib = os.environ["GPUMEMTRACE_LIBRARY"]
    sim = os.environ.get("SIM_DIR", os.path.join(BUILD, "sim"))
    progs = os.environ.get("PROG_DIR", os.path.join(BUILD, "tests", "progs"))

    def golden(self, name):
        return os.path.join(ROOT, "tests", "golden", name)

    def summary_json(self, *paths):
        out = subprocess.run([self.cli, "summary", "--json", *paths], check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out)

    def traced_env(self, **extra):
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = self.sim + ":" + self.progs
        env["PYTHONPATH"] = os.path.join(ROOT, "python")
        env.update(extra)
        return env


@pytest.fixture(scope="session")
def gmt():
    return Env()
