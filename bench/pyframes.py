"""Cost per Python frame of reading the calling thread's Python stack on
the hook path (gmt_python_splice, the GIL released), cached, uncached and
cold (bench/pyframes.c says what each means). Run by `make bench-pyframes`
(PY=... picks the interpreter). For each mode it times calls from several
Python depths and fits ns = fixed + per_frame * frames (least squares),
reporting the median of ROUNDS rounds."""
import os
import statistics
import sys

sys.path.insert(0, os.environ.get("GMT_PYBENCH", "build/bench"))
import gmtpybench  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "7"))
CALLS = {0: 200000, 1: 3000, 2: 3000}
DEPTHS = (1, 21, 41, 81)


# A chain of distinct functions, so that each frame is a code object of
# its own (as in a real program) and "uncached" misses on every frame.
CHAIN = max(DEPTHS)
src = "".join("def f%d(n, mode):\n    return f%d(n, mode)\n" % (i, i + 1) for i in range(CHAIN))
src += "def f%d(n, mode):\n    return gmtpybench.splice(n, mode)\n" % CHAIN
exec(compile(src, "chain.py", "exec"))


def at_depth(d, n, mode):
    return globals()["f%d" % (CHAIN + 1 - d)](n, mode)


def fit(points):
    xs, ys = zip(*points)
    mx, my = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, slope


print("python %s, %d rounds, depths %s (plus the script's own frames)"
      % (sys.version.split()[0], ROUNDS, DEPTHS))
for mode, name in ((0, "cached"), (1, "uncached"), (2, "cold")):
    fixed, per = [], []
    for _ in range(ROUNDS):
        points = []
        for d in DEPTHS:
            ns, got = at_depth(d, CALLS[mode], mode)
            points.append((got - 4, ns))  # 4 native frames in each stack
        f, p = fit(points)
        fixed.append(f)
        per.append(p)
    print("%-9s %8.1f ns per frame (rounds %.1f..%.1f), %8.1f ns per call fixed, frames %d..%d"
          % (name, statistics.median(per), min(per), max(per), statistics.median(fixed),
             points[0][0], points[-1][0]))
