"""IPython magics over the kernel's own trace (`%load_ext gpumemtrace`).

    %%gpumemtrace            the cell as a range in the trace; after it runs:
                             its GPU peak, what it left live, its top sites
                             by Python line, and a timeline (inline SVG)
    %gpumemtrace summary     `gpumemtrace summary` on the trace so far
    %gpumemtrace explain     ... explain; also top, leaks, growth, oom,
    %gpumemtrace plot        fragmentation, accounting; plot and
                             flamegraph are drawn inline

The kernel must be started under the tracer (`python -m gpumemtrace kernel
install`): CUDA has to find it loaded. In any other kernel the magics say
so in one line, and a %%gpumemtrace cell still runs. The notebook's own
code is named `In [n], line k`, as IPython numbers its cells.
"""
import ctypes
import html
import os
import re
import shlex
import subprocess
import sys
import tempfile

from . import _paths, range_pop, range_push

PREFIX = "gpumemtrace.cell:"
NOT_TRACED = ("gpumemtrace: this kernel is not traced (CUDA must find the tracer loaded when "
              "it starts): run `python -m gpumemtrace kernel install --user` and pick the "
              "kernel 'Python 3 (gpumemtrace)'")
REPORTS = ("summary", "explain", "top", "leaks", "growth", "oom", "fragmentation", "accounting")
DRAWN = ("plot", "flamegraph")
TOP = 5
# The CLI's warning for a trace with no trailer: the kernel's trace has none
# while the kernel runs. After a flush that took everything, it is whole up
# to the magic's call, which this line says instead.
_NO_TRAILER = re.compile(r"^gpumemtrace \w+: warning: .*: incomplete trace: no trailer at the end "
                         r"\(the process was killed or is still running\); results cover what "
                         r"was written\n?$", re.M)
SO_FAR = ("gpumemtrace: the kernel's trace so far: it ends when the kernel does, and holds "
          "every event up to this command\n")


def fmt_size(n):
    """As the CLI writes sizes: 512 B, 1.50 MiB, 24.0 MiB, 128 MiB."""
    if n < 1024:
        return "%d B" % n
    v, unit = float(n), 0
    while v >= 1024 and unit < 4:
        v /= 1024
        unit += 1
    f = "%.2f %s" if v < 10 else "%.1f %s" if v < 100 else "%.0f %s"
    return f % (v, ("B", "KiB", "MiB", "GiB", "TiB")[unit])


def fmt_secs(ns):
    s = ns / 1e9
    return "%.0f ms" % (s * 1000) if s < 1 else "%.2f s" % s if s < 10 else "%.1f s" % s


class _Tracer:
    """The preloaded library's entry points, or None when not traced."""

    def __init__(self):
        self.ok = False
        try:
            lib = ctypes.CDLL(None)
            self.flush = lib.gpumemtrace_flush_v1
            self.path_of = lib.gpumemtrace_trace_path_v1
        except AttributeError:
            return
        self.flush.argtypes = [ctypes.c_uint]
        self.flush.restype = ctypes.c_int
        self.path_of.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self.path_of.restype = ctypes.c_long
        self.ok = True

    def path(self):
        """The trace file, once the process has one (its first CUDA call)."""
        buf = ctypes.create_string_buffer(4096)
        return buf.value.decode(errors="replace") if self.path_of(buf, len(buf)) > 0 else None


class Magics:
    """The magics' state: the trace and the cells' names."""

    def __init__(self, shell):
        self.shell = shell
        self.tracer = _Tracer()
        self.follow = None
        self.bodies = {}  # a %%gpumemtrace cell's body file -> (its cell's number, 1)

    # ---- naming the notebook's code -----------------------------------------

    def _fmap(self):
        return getattr(getattr(self.shell, "compile", None), "_filename_map", None) or {}

    def _cells(self):
        """File name (as the trace names it) -> (IPython's cell number, the
        line in the cell of the file's line 1, less one)."""
        cells = {os.path.basename(k): (v, 0) for k, v in self._fmap().items()
                 if isinstance(v, int)}
        cells.update(self.bodies)
        return cells

    def name_lines(self, text, cells=None):
        """'f (/tmp/ipykernel_1/12.py:3)' -> 'f (In [4], line 3)'."""
        cells = self._cells() if cells is None else cells

        def one(m):
            base = os.path.basename(m.group(1))
            if base not in cells:
                return m.group(0)
            number, offset = cells[base]
            return "In [%d], line %d" % (number, int(m.group(2)) + offset)

        return re.sub(r"([^\s():<]+\.py):(\d+)", one, text)

    def name_site(self, site, cells):
        """A site and its callers, named; callers past the notebook's own
        code (IPython's, the magic's) left out."""
        parts = self.name_lines(site, cells).split(" <- ")
        while len(parts) > 1 and "(In [" not in parts[-1]:
            parts.pop()
        return " <- ".join(parts)

    # ---- %%gpumemtrace ---------------------------------------------------

    def cell(self, line, cell):
        if not self.tracer.ok:
            print(NOT_TRACED + "; the cell runs untraced")
            self.shell.run_cell(cell, store_history=False)
            return
        fmap = self._fmap()
        # the number the notebook shows: the one IPython gave this cell's file
        n = list(fmap.values())[-1] if fmap else self.shell.execution_count
        before = set(fmap)
        tag = "In [%d]" % n
        range_push(PREFIX + tag)
        try:
            self.shell.run_cell(cell, store_history=False)
        finally:
            range_pop()
            # the body runs as a cell of its own: its lines are the cell's
            # less the %%gpumemtrace line
            for f in set(self._fmap()) - before:
                self.bodies[os.path.basename(f)] = (n, 1)
        self._show_cell(tag)

    def _window(self, tag):
        from . import reader  # pylint: disable=import-outside-toplevel

        if self.tracer.flush(5000) < 0:
            return None, "the tracer did not write the cell's events within 5 s"
        if self.follow is None:
            path = self.tracer.path()
            if path is None:
                return None, "the cell made no CUDA call: the kernel has no trace yet"
            try:
                self.follow = reader.Follow(path, PREFIX)
            except reader.TraceError as err:
                return None, str(err)
        w = self.follow.window(tag)
        if w is None:
            return None, "the cell's range is not in the trace"
        return w, None

    def _show_cell(self, tag):
        w, why = self._window(tag)
        if w is None:
            print("gpumemtrace: %s: %s" % (tag, why))
            return
        cells = self._cells()
        sites = [dict(s, site=self.name_site(s["site"], cells)) for s in w["sites"][:TOP]]
        points = self.follow.timeline(tag)
        lost = self.follow.status()["lost_events"]
        text, page = render_cell(tag, w, sites, points, lost)
        from IPython.display import display  # pylint: disable=import-outside-toplevel

        display({"text/plain": text, "text/html": page}, raw=True)

    # ---- %gpumemtrace COMMAND ------------------------------------------------

    def line(self, line):
        args = shlex.split(line)
        what = args[0] if args else "help"
        if what not in REPORTS + DRAWN:
            print("usage: %%gpumemtrace summary|explain|plot|%s [OPTIONS]   "
                  "(the CLI's reports on this kernel's trace so far; %%%%gpumemtrace on a "
                  "cell measures the cell)" % "|".join(REPORTS[2:] + DRAWN[1:]))
            if self.tracer.ok:
                print("trace: %s" % (self.tracer.path() or "none yet (no CUDA call so far)"))
            return
        if not self.tracer.ok:
            print(NOT_TRACED)
            return
        whole = self.tracer.flush(5000) == 0
        path = self.tracer.path()
        if path is None:
            print("gpumemtrace: no CUDA call so far: the kernel has no trace yet")
            return
        cli = _paths.cli()
        if cli is None:
            print(_paths.missing("the gpumemtrace command-line tool"))
            return
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)  # the CLI is not a traced program
        if what in DRAWN:
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "out.svg")
                r = subprocess.run([cli, what, *args[1:], "-o", out, path], env=env,
                                   capture_output=True, text=True, check=False)
                sys.stderr.write(self.name_lines(_so_far(r.stderr, whole)))
                if r.returncode == 0 and os.path.exists(out):
                    from IPython.display import SVG, display  # pylint: disable=import-outside-toplevel

                    with open(out, encoding="utf-8") as f:
                        display(SVG(f.read()))
            return
        r = subprocess.run([cli, what, *args[1:], path], env=env, capture_output=True,
                           text=True, check=False)
        cells = self._cells()
        sys.stdout.write(self.name_lines(r.stdout, cells))
        sys.stderr.write(self.name_lines(_so_far(r.stderr, whole), cells))


def _so_far(err, whole):
    """The CLI's stderr, its no-trailer warning said as what it is here."""
    if not whole:
        return err  # the flush did not finish: the trace may lack the latest events
    out, n = _NO_TRAILER.subn("", err)
    return (SO_FAR + out) if n else out


def render_cell(tag, w, sites, points, lost):
    """The cell's figures as text and as HTML with an SVG timeline."""
    dur = max(w["end_ns"] - w["start_ns"], 0)
    head = ("%s: GPU peak %s, left live %s, %d allocation%s%s in %s"
            % (tag, fmt_size(w["peak_bytes"]), fmt_size(w["live_bytes"]), w["allocs"],
               "" if w["allocs"] == 1 else "s",
               ", %d failed (%d out of memory)" % (w["failed"], w["ooms"]) if w["failed"] else "",
               fmt_secs(dur)))
    lines = [head]
    if lost:
        lines.append("PARTIAL DATA: the trace lost %d events: figures may be low" % lost)
    if sites:
        lines.append("at the peak, by site:")
        for s in sites:
            lines.append("  %10s  %4d  %s" % (fmt_size(s["bytes"]), s["allocs"], s["site"]))
    elif not w["allocs"]:
        lines.append("(the cell made no GPU allocation)")
    text = "\n".join(lines)
    rows = "".join("<tr><td style='text-align:right'>%s</td><td style='text-align:right'>%d"
                   "</td><td style='text-align:left'><code>%s</code></td></tr>"
                   % (fmt_size(s["bytes"]), s["allocs"], html.escape(s["site"])) for s in sites)
    table = ("<table><tr><th>live at the peak</th><th>allocations</th><th style='text-align:left'>"
             "site</th></tr>%s</table>" % rows) if sites else ""
    warn = ("<p style='color:#b00'><b>%s</b></p>" % html.escape(lines[1])) if lost else ""
    page = ("<div class='gpumemtrace-cell'><p><b>%s</b></p>%s%s%s</div>"
            % (html.escape(head), warn, timeline_svg(points, dur, w["peak_bytes"]), table))
    return text, page


def timeline_svg(points, dur, peak, width=560, height=120):
    """The cell's own live GPU bytes over its run, as a step line."""
    if not points or not peak:
        return ""
    left, top, right, bottom = 64, 10, 10, 22
    pw, ph = width - left - right, height - top - bottom
    span = max(dur, points[-1][0], 1)

    def xy(t, v):
        return left + pw * t / span, top + ph * (1 - v / peak)

    path, prev = [], 0
    x, y = xy(0, 0)
    path.append("M%.1f,%.1f" % (x, y))
    for t, v in points:
        x, _ = xy(t, prev)
        path.append("L%.1f,%.1f" % (x, xy(t, prev)[1]))
        path.append("L%.1f,%.1f" % (x, xy(t, v)[1]))
        prev = v
    path.append("L%.1f,%.1f" % (xy(span, prev)[0], xy(span, prev)[1]))
    pk = max(points, key=lambda p: p[1])
    px, py = xy(pk[0], pk[1])
    return ("<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
            "font-family='sans-serif' font-size='11'>"
            "<rect x='%d' y='%d' width='%d' height='%d' fill='#f7f7f7' stroke='#ccc'/>"
            "<path d='%s' fill='none' stroke='#1f77b4' stroke-width='1.5'/>"
            "<circle cx='%.1f' cy='%.1f' r='3' fill='#d62728'/>"
            "<text x='%d' y='%d' text-anchor='end'>%s</text>"
            "<text x='%d' y='%d' text-anchor='end'>0</text>"
            "<text x='%d' y='%d'>0</text><text x='%d' y='%d' text-anchor='end'>%s</text>"
            "<text x='%.1f' y='%.1f' fill='#d62728' text-anchor='%s'>peak</text></svg>"
            % (width, height, left, top, pw, ph, " ".join(path), px, py, left - 4, top + 9,
               html.escape(fmt_size(peak)), left - 4, top + ph, left, height - 6,
               left + pw, height - 6, html.escape(fmt_secs(span)),
               px - 6 if px > left + pw * 0.7 else px + 6, max(py + 4, top + 10),
               "end" if px > left + pw * 0.7 else "start"))


def load(shell):
    """Registers the magics (IPython's load_ipython_extension)."""
    m = Magics(shell)

    def gpumemtrace(line, cell=None):
        """%%gpumemtrace on a cell: its GPU peak, what it left live, its top
        sites by Python line and a timeline. %gpumemtrace summary|explain|plot|...:
        the CLI's reports on the kernel's trace so far."""
        if cell is None:
            return m.line(line)
        return m.cell(line, cell)

    shell.register_magic_function(gpumemtrace, magic_kind="line_cell", magic_name="gpumemtrace")
    if not m.tracer.ok:
        print(NOT_TRACED + "; the magics will say only this")
    return m
