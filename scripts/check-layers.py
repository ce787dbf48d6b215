#!/usr/bin/env python3
"""make check-layers: the tree's dependencies run one way (README, Layout).

Three checks, each against the tables below:
  includes  every #include "x/..." in a layer names a layer it may use;
  calls     every symbol an object leaves undefined, and another of our
            objects defines, is defined in a layer it may use. The library
            links with -Bsymbolic, so a plain dlsym() in the core would call
            our own dlsym hook: such calls count too;
  walks     cli/ parses and renders: no file of it walks a trace's events
            itself (the reader's record loop, the replay, the passes'
            trackers): analysis/ does, behind an aggregator's entry point.
            cmd-dump.c, which prints each record as it is read, is the one
            exception.
The hooks reach the core through one narrow header, preload/tracer.h.
Usage: check-layers.py BUILD   (objects under BUILD/obj/lib and BUILD/obj/cli;
GMT_LAYERS_ROOT names another tree to read, for the test)
Prints each violation on a line of its own, then one summary line; exits 1
on any violation."""
import os, re, subprocess, sys

# layer: (folder prefix, the layers it may use besides itself)
LAYERS = [
    ("include", "include/gpumemtrace/", []),
    ("common", "common/", ["include"]),
    ("hooks", "preload/hooks/", ["preload", "common", "include"]),
    ("preload", "preload/", ["common", "include"]),
    ("reader", "reader/", ["common", "include"]),
    ("model", "model/", ["common", "include"]),
    ("analysis", "analysis/", ["model", "reader", "common", "include"]),
    ("cli", "cli/", ["analysis", "reader", "common", "include"]),
    ("capi", "capi/", ["analysis", "reader", "common", "include"]),
]
NARROW = "preload/tracer.h"  # the one header through which the hooks call the core
ALLOWED = {name: set(uses) | {name} for name, _, uses in LAYERS}
# What walks events: cli/ may not call these (WALK_EXEMPT aside).
WALKERS = re.compile(r"^(gmt_reader_next|trace_replay|trace_open_replay|replay_[a-z_]+|"
                     r"peakset_[a-z_]+|phase_(attach|advance|charge|note_live|init))$")
WALK_EXEMPT = {"cli/cmd-dump.c"}


def layer_of(path):
    for name, prefix, _ in LAYERS:
        if path.startswith(prefix):
            return name
    return None


def include_target(inc):
    if inc.startswith("gpumemtrace/"):
        return "include"
    return layer_of(inc)


# Layers whose allocations fail through xalloc_failed (reader/xalloc.h).
READING = ("reader", "analysis", "cli", "capi", "model")


def check_includes(root, out):
    files = subprocess.run(["git", "-C", root, "ls-files", "*.c", "*.h"], capture_output=True,
                           text=True, check=True).stdout.split()
    count = 0
    for f in files:
        src = layer_of(f)
        if src is None:
            continue
        for n, line in enumerate(open(os.path.join(root, f), errors="replace"), 1):
            if (src in READING and f != "reader/hash.h"
                    and re.match(r'\s*#\s*include\s+<uthash\.h>', line)):
                out.append(f"{f}:{n}: the reading side includes \"reader/hash.h\", not "
                           "<uthash.h> (whose out-of-memory is exit(-1))")
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            count += 1
            dst = include_target(m.group(1))
            if dst is None:
                out.append(f"{f}:{n}: includes \"{m.group(1)}\", which is in no layer "
                           "(write includes from the root)")
            elif dst not in ALLOWED[src]:
                out.append(f"{f}:{n}: {src} may not include {dst} (\"{m.group(1)}\")")
            elif src == "hooks" and dst == "preload" and m.group(1) != NARROW:
                out.append(f"{f}:{n}: hooks reach the core through {NARROW} alone "
                           f"(\"{m.group(1)}\")")
    return count


def symbols(obj):
    res = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in res.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRCGSVW":
            defined.add(name)
    return defined, undefined


def check_calls(build, root, out):
    count = 0
    for binary in ("lib", "cli"):
        base = os.path.join(build, "obj", binary)
        objs = {}
        for dirpath, _, names in os.walk(base):
            for n in names:
                if n.endswith(".o"):
                    full = os.path.join(dirpath, n)
                    rel = os.path.relpath(full, base)
                    # an object left from a source since removed is not the tree
                    if os.path.exists(os.path.join(root, rel[:-2] + ".c")):
                        objs[rel] = symbols(full)
        if not objs:
            out.append(f"{base}: no objects (build first: make all)")
            continue
        if binary == "lib":
            for rel in sorted(objs):
                if layer_of(rel) not in ("preload", "hooks", "common"):
                    out.append(f"{rel[:-2]}.c: linked into the library, which takes only "
                               "preload/ and common/")
        where = {}
        for rel, (defined, _) in objs.items():
            for s in defined:
                where.setdefault(s, rel)
        for rel, (_, undefined) in sorted(objs.items()):
            src = layer_of(rel)
            if src is None:
                continue
            if src == "cli" and rel[:-2] + ".c" not in WALK_EXEMPT:
                for s in sorted(u for u in undefined if WALKERS.match(u)):
                    out.append(f"{rel[:-2]}.c: cli walks events itself ({s}): give analysis/ "
                               "an entry point for it")
            for s in sorted(undefined):
                if s not in where:
                    continue
                count += 1
                dst = layer_of(where[s])
                if dst not in ALLOWED[src]:
                    out.append(f"{rel[:-2]}.c: {src} calls {s}, defined in {dst} "
                               f"({where[s][:-2]}.c)")
    return count


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    root = os.environ.get("GMT_LAYERS_ROOT") or subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
        check=True).stdout.strip()
    out = []
    n_inc = check_includes(root, out)
    n_calls = check_calls(build, root, out)
    for line in out:
        print("check-layers: " + line)
    order = (
        "include/ <- common/ <- preload/ <- preload/hooks/; common/ <- reader/, model/ <- analysis/ <- cli/"
    )
    status = "OK" if not out else f"{len(out)} violation(s)"
    print(f"check-layers: {n_inc} includes and {n_calls} calls between our objects "
          f"checked against {order}: {status}")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
