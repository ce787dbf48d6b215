"""Reading traces from Python: gpumemtrace.load(path).

    t = gpumemtrace.load("gpumemtrace.1234.gmt")
    t.process, t.devices, t.modules, t.status      # dicts and lists
    ev = t.events.to_pandas()                      # or .to_arrow() (pyarrow)
    ev.groupby("device").device_bytes.max()        # each device's peak, as summary's
    t.stacks[ev.stack_id[0]]                       # its frames, Python lines included

The C reader does the reading (libgpumemtrace-reader.so, through ctypes):
the same time order, phases, live bytes and sites as the CLI's reports.
Columns come to pyarrow without a copy. Nothing here is needed to trace.
docs/python.md has every table and column.
"""
import ctypes
import json
import warnings

from . import _paths

__all__ = ["load", "Trace", "Table", "TraceError", "IncompleteTraceWarning", "schema"]


class TraceError(Exception):
    """The file cannot be read as a trace (the reason is the message)."""


class IncompleteTraceWarning(UserWarning):
    """The trace is not whole: the program was killed, events were lost, or
    chunks are damaged. Its figures cover only what it holds."""


class _Column(ctypes.Structure):
    # include/gpumemtrace/trace-reader.h, struct gmtr_column
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int), ("rows", ctypes.c_uint64),
                ("values", ctypes.c_void_p), ("valid", ctypes.c_void_p),
                ("nulls", ctypes.c_uint64), ("dict_size", ctypes.c_uint64),
                ("dict_offsets", ctypes.c_void_p), ("dict_data", ctypes.c_void_p)]


class _Window(ctypes.Structure):
    # struct gmtr_window
    _fields_ = [("name", ctypes.c_char_p), ("closed", ctypes.c_int), ("tid", ctypes.c_uint64),
                ("start_ns", ctypes.c_int64), ("end_ns", ctypes.c_int64),
                ("peak_bytes", ctypes.c_uint64), ("live_bytes", ctypes.c_uint64),
                ("allocs", ctypes.c_uint64), ("failed", ctypes.c_uint64),
                ("ooms", ctypes.c_uint64), ("sites_json", ctypes.c_char_p)]


_I64, _U64, _I32, _BOOL, _DICT = 1, 2, 3, 4, 5
_ABI = 1
_lib = None


def _library():
    global _lib  # pylint: disable=global-statement
    if _lib is not None:
        return _lib
    path = _paths.reader_library()
    if path is None:
        raise TraceError(_paths.missing("libgpumemtrace-reader.so"))
    try:
        lib = ctypes.CDLL(path)
    except OSError as err:
        # a system library the wheel needs is missing (docs/python.md)
        raise TraceError("gpumemtrace: cannot load %s: %s" % (path, err)) from None
    lib.gmtr_abi.restype = ctypes.c_int
    if lib.gmtr_abi() < _ABI:
        raise TraceError("gpumemtrace: %s is older than this package" % path)
    lib.gmtr_open.restype = ctypes.c_void_p
    lib.gmtr_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.gmtr_close.argtypes = [ctypes.c_void_p]
    lib.gmtr_close.restype = None
    lib.gmtr_meta_json.restype = ctypes.c_char_p
    lib.gmtr_meta_json.argtypes = [ctypes.c_void_p]
    lib.gmtr_table.restype = ctypes.c_int64
    lib.gmtr_table.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.gmtr_column.restype = ctypes.c_int
    lib.gmtr_column.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                ctypes.POINTER(_Column)]
    lib.gmtr_error.restype = ctypes.c_char_p
    lib.gmtr_error.argtypes = [ctypes.c_void_p]
    lib.gmtr_schema_json.restype = ctypes.c_char_p
    lib.gmtr_follow_open.restype = ctypes.c_void_p
    lib.gmtr_follow_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                     ctypes.c_size_t]
    lib.gmtr_follow_poll.restype = ctypes.c_int64
    lib.gmtr_follow_poll.argtypes = [ctypes.c_void_p]
    lib.gmtr_follow_window.restype = ctypes.c_int
    lib.gmtr_follow_window.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(_Window)]
    lib.gmtr_follow_timeline_json.restype = ctypes.c_char_p
    lib.gmtr_follow_timeline_json.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.gmtr_follow_framework_json.restype = ctypes.c_char_p
    lib.gmtr_follow_framework_json.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.gmtr_follow_status_json.restype = ctypes.c_char_p
    lib.gmtr_follow_status_json.argtypes = [ctypes.c_void_p]
    lib.gmtr_follow_close.restype = None
    lib.gmtr_follow_close.argtypes = [ctypes.c_void_p]
    _lib = lib
    return lib


def schema():
    """Every table's columns: {"tables": {name: {"doc", "columns": [{"name",
    "type", "doc"}]}}} (types: int64, uint64, int32, bool, string)."""
    return json.loads(_library().gmtr_schema_json().decode())


class _Handle:
    """Owns the C trace: Arrow buffers keep it alive while they need it."""

    def __init__(self, lib, ptr):
        self.lib, self.ptr = lib, ptr

    def __del__(self):
        if self.ptr:
            self.lib.gmtr_close(self.ptr)
            self.ptr = None


def _bits(address, rows):
    """A bit-packed C array as a list of bools."""
    raw = ctypes.string_at(address, (rows + 7) // 8) if rows else b""
    return [bool(raw[i >> 3] >> (i & 7) & 1) for i in range(rows)]


class Table:
    """One of a trace's tables: len(), columns, to_arrow(), to_pandas(),
    to_pylist(). Built by the C reader on first use."""

    def __init__(self, trace, name):
        self._trace, self.name = trace, name
        spec = schema()["tables"][name]
        self.doc = spec["doc"]
        self.columns = [c["name"] for c in spec["columns"]]
        self._types = {c["name"]: c["type"] for c in spec["columns"]}
        self._built = None  # the columns asked for when built

    def __repr__(self):
        return "<gpumemtrace table %s: %s>" % (self.name, ", ".join(self.columns))

    def _build(self, columns):
        h = self._trace._handle  # pylint: disable=protected-access
        want = list(self.columns if columns is None else columns)
        bad = [c for c in want if c not in self.columns]
        if bad:
            raise KeyError("table %s has no column %s" % (self.name, ", ".join(bad)))
        if self._built is None:
            # only events can be built in part: the other tables are small
            arg = ",".join(want) if self.name == "events" and columns is not None else ""
            n = h.lib.gmtr_table(h.ptr, self.name.encode(), arg.encode())
            if n < 0:
                raise TraceError(h.lib.gmtr_error(h.ptr).decode(errors="replace"))
            self._built = want if arg else list(self.columns)
        missing = [c for c in want if c not in self._built]
        if missing:
            raise TraceError("column %s of %s: the table was built without it (load the "
                             "trace again to read it)" % (", ".join(missing), self.name))
        return want

    def _column(self, name):
        h = self._trace._handle  # pylint: disable=protected-access
        col = _Column()
        if h.lib.gmtr_column(h.ptr, self.name.encode(), name.encode(), ctypes.byref(col)) < 0:
            raise TraceError(h.lib.gmtr_error(h.ptr).decode(errors="replace"))
        return col

    def __len__(self):
        self._build(self._built)
        return self._column(self._built[0]).rows

    # ---- Arrow: the columns as they are in C memory, no copy ----

    def to_arrow(self, columns=None):
        """A pyarrow.Table (pip install pyarrow). columns: a subset, in
        that order; for events, only those are built (saves memory)."""
        import pyarrow as pa  # pylint: disable=import-outside-toplevel

        want = self._build(columns)
        arrays = [self._arrow_column(pa, self._column(name)) for name in want]
        return pa.table(arrays, names=want)

    def _arrow_column(self, pa, col):
        h = self._trace._handle  # pylint: disable=protected-access
        n = col.rows

        def buf(address, size):
            return pa.foreign_buffer(address or 0, size if address else 0, base=h)

        valid = buf(col.valid, (n + 7) // 8) if col.valid else None
        if col.type == _DICT:
            offsets = buf(col.dict_offsets, 4 * (col.dict_size + 1))
            end = ctypes.c_int32.from_address(col.dict_offsets + 4 * col.dict_size).value
            data = buf(col.dict_data, end) if end else pa.py_buffer(b"")
            dictionary = pa.Array.from_buffers(pa.string(), col.dict_size, [None, offsets, data])
            indices = pa.Array.from_buffers(pa.int32(), n, [valid, buf(col.values, 4 * n)],
                                            null_count=col.nulls)
            return pa.DictionaryArray.from_arrays(indices, dictionary)
        kind = {_I64: (pa.int64(), 8), _U64: (pa.uint64(), 8), _I32: (pa.int32(), 4)}
        if col.type == _BOOL:
            return pa.Array.from_buffers(pa.bool_(), n, [valid, buf(col.values, (n + 7) // 8)],
                                         null_count=col.nulls)
        typ, width = kind[col.type]
        return pa.Array.from_buffers(typ, n, [valid, buf(col.values, width * n)],
                                     null_count=col.nulls)

    # ---- pandas: through numpy, pyarrow not needed ----

    def to_pandas(self, columns=None):
        """A pandas.DataFrame: integer columns as numpy arrays (nullable
        Int64/UInt64 where a column has nulls), strings as categoricals."""
        import numpy as np  # pylint: disable=import-outside-toplevel
        import pandas as pd  # pylint: disable=import-outside-toplevel

        want = self._build(columns)
        data = {}
        for name in want:
            data[name] = self._pandas_column(np, pd, self._column(name))
        return pd.DataFrame(data, columns=want)

    @staticmethod
    def _numpy(np, address, dtype, count):
        if not count:
            return np.zeros(0, dtype=dtype)
        raw = (ctypes.c_char * (count * np.dtype(dtype).itemsize)).from_address(address)
        return np.frombuffer(raw, dtype=dtype).copy()

    def _pandas_column(self, np, pd, col):
        n = col.rows
        valid = None
        if col.valid:
            valid = np.unpackbits(self._numpy(np, col.valid, np.uint8, (n + 7) // 8),
                                  bitorder="little")[:n].astype(bool)
        if col.type == _DICT:
            codes = self._numpy(np, col.values, np.int32, n)
            offs = self._numpy(np, col.dict_offsets, np.int32, col.dict_size + 1)
            blob = ctypes.string_at(col.dict_data, int(offs[-1])) if col.dict_size else b""
            cats = [blob[offs[i]:offs[i + 1]].decode("utf-8", "replace")
                    for i in range(col.dict_size)]
            if valid is not None:
                codes[~valid] = -1
            return pd.Categorical.from_codes(codes, categories=pd.Index(cats, dtype=object))
        if col.type == _BOOL:
            bits = np.unpackbits(self._numpy(np, col.values, np.uint8, (n + 7) // 8),
                                 bitorder="little")[:n].astype(bool)
            return pd.array(bits, dtype="boolean") if valid is not None else bits
        dtype = {_I64: np.int64, _U64: np.uint64, _I32: np.int32}[col.type]
        values = self._numpy(np, col.values, dtype, n)
        if valid is None:
            return values
        nullable = {_I64: "Int64", _U64: "UInt64", _I32: "Int32"}[col.type]
        return pd.arrays.IntegerArray(values, ~valid) if nullable else values

    # ---- plain Python ----

    def to_pylist(self, columns=None):
        """Rows as dicts, with no third-party package (slow for big tables)."""
        want = self._build(columns)
        cols = {name: self._python_column(self._column(name)) for name in want}
        return [{name: cols[name][i] for name in want} for i in range(len(self))]

    @staticmethod
    def _python_column(col):
        n = col.rows
        valid = _bits(col.valid, n) if col.valid else None
        if col.type == _DICT:
            codes = (ctypes.c_int32 * n).from_address(col.values) if n else []
            offs = (ctypes.c_int32 * (col.dict_size + 1)).from_address(col.dict_offsets)
            blob = ctypes.string_at(col.dict_data, offs[col.dict_size]) if col.dict_size else b""
            cats = [blob[offs[i]:offs[i + 1]].decode("utf-8", "replace")
                    for i in range(col.dict_size)]
            out = [cats[c] for c in codes]
        elif col.type == _BOOL:
            out = _bits(col.values, n)
        else:
            ctype = {_I64: ctypes.c_int64, _U64: ctypes.c_uint64, _I32: ctypes.c_int32}[col.type]
            out = list((ctype * n).from_address(col.values)) if n else []
        if valid is not None:
            out = [v if ok else None for v, ok in zip(out, valid)]
        return out


class Stacks(Table):
    """The stacks table; stacks[stack_id] gives that stack's frames,
    innermost first, as dicts of the frames table's columns."""

    def __getitem__(self, stack_id):
        index = self._trace._frames_by_stack()  # pylint: disable=protected-access
        return index.get(int(stack_id), [])


class Trace:
    """A trace file, read through the C reader. See load()."""

    def __init__(self, path):
        lib = _library()
        err = ctypes.create_string_buffer(256)
        ptr = lib.gmtr_open(str(path).encode(), err, len(err))
        if not ptr:
            raise TraceError("%s: %s" % (path, err.value.decode(errors="replace")))
        self._handle = _Handle(lib, ptr)
        meta = json.loads(lib.gmtr_meta_json(ptr).decode("utf-8", "replace"))
        self.path = meta["path"]
        self.format_version = meta["format_version"]
        self.process = meta["process"]
        self.devices = meta["devices"]
        self.modules = meta["modules"]
        self.notes = meta["notes"]
        self.status = meta["status"]
        self.events = Table(self, "events")
        self.frames = Table(self, "frames")
        self.stacks = Stacks(self, "stacks")
        self.samples = Table(self, "samples")
        self.ranges = Table(self, "ranges")
        self.counters = Table(self, "counters")
        self._frames_index = None

    @property
    def complete(self):
        """The whole trace: ended with its trailer, nothing lost or damaged."""
        return self.status["complete"] and not self.status["lost_events"]

    @property
    def rank(self):
        """The process's rank (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or
        SLURM_PROCID in its environment), else None."""
        return self.process.get("rank")

    def problems(self):
        """Why the trace is not whole, one line each ([] when it is)."""
        s, out = self.status, []
        if s["lost_events"]:
            out.append("%d events were lost (not in the trace)" % s["lost_events"])
        if s["stop"]:
            out.append("the trace stops early (%s: %s); %d bytes unread"
                       % (s["stop"], s["stop_message"], s["unreadable_bytes"]))
        elif not s["has_trailer"]:
            out.append("the trace has no end record: the program was killed or is still running")
        for d in s["damage"]:
            out.append("damaged: %s" % d)
        return out

    def _frames_by_stack(self):
        if self._frames_index is None:
            index = {}
            for row in self.frames.to_pylist():
                index.setdefault(row["stack_id"], []).append(row)
            self._frames_index = index
        return self._frames_index

    def __repr__(self):
        return "<gpumemtrace trace %s: pid %s, %d events%s>" % (
            self.path, self.process.get("pid"), self.status["events"],
            "" if self.complete else ", INCOMPLETE")


class Follow:
    """A trace still being written, read as it grows, window by window: a
    window is a range pushed with a text starting with `prefix` (the pytest
    plugin's tests). See include/gpumemtrace/trace-reader.h."""

    def __init__(self, path, prefix):
        self._lib = _library()
        err = ctypes.create_string_buffer(256)
        self._ptr = self._lib.gmtr_follow_open(str(path).encode(), prefix.encode(), err, len(err))
        if not self._ptr:
            raise TraceError("%s: %s" % (path, err.value.decode(errors="replace")))
        self._seen = 0

    def __del__(self):
        if getattr(self, "_ptr", None):
            self._lib.gmtr_follow_close(self._ptr)
            self._ptr = None

    def poll(self):
        """Reads what the file gained; the windows opened so far. Raises
        TraceError when the reader ran out of memory (now or before)."""
        n = self._lib.gmtr_follow_poll(self._ptr)
        if n < 0:
            raise TraceError("gpumemtrace: out of memory while following the trace")
        return n

    def windows(self):
        """Every window so far, as dicts (closed ones with their figures)."""
        n = self.poll()
        return [self._window(i) for i in range(n)]

    def window(self, name):
        """The last closed window of that name after a poll, or None."""
        n = self.poll()
        for i in range(n - 1, -1, -1):
            w = self._window(i)
            if w["closed"] and w["name"] == name:
                return w
        return None

    def _window(self, i):
        w = _Window()
        if self._lib.gmtr_follow_window(self._ptr, i, ctypes.byref(w)) < 0:
            raise IndexError(i)
        return {"name": w.name.decode("utf-8", "replace"), "closed": bool(w.closed),
                "tid": w.tid, "start_ns": w.start_ns, "end_ns": w.end_ns,
                "peak_bytes": w.peak_bytes, "live_bytes": w.live_bytes, "allocs": w.allocs,
                "failed": w.failed, "ooms": w.ooms,
                "sites": json.loads(w.sites_json.decode("utf-8", "replace")),
                "framework": json.loads(
                    self._lib.gmtr_follow_framework_json(self._ptr, i).decode())}

    def timeline(self, name):
        """The last closed window of that name: [(ns since its start, device
        bytes of its own allocations)...], or [] (after window())."""
        for i in range(self.poll() - 1, -1, -1):
            w = self._window(i)
            if w["closed"] and w["name"] == name:
                raw = self._lib.gmtr_follow_timeline_json(self._ptr, i)
                return [tuple(p) for p in json.loads(raw.decode())] if raw else []
        return []

    def status(self):
        """{"events", "lost_events", "lost_in_children"} so far."""
        return json.loads(self._lib.gmtr_follow_status_json(self._ptr).decode())


def load(path, warn=True):
    """Opens a trace. A trace that is not whole still opens: a warning
    (IncompleteTraceWarning) says why, and Trace.problems() lists it."""
    t = Trace(path)
    if warn and not t.complete:
        warnings.warn("%s: %s" % (path, "; ".join(t.problems()) or "incomplete"),
                      IncompleteTraceWarning, stacklevel=2)
    return t


def schema_markdown():
    """The tables and their columns as docs/python.md lists them."""
    out = []
    for name, spec in schema()["tables"].items():
        out.append("### `%s`\n\n%s.\n\n| column | type | what |\n| --- | --- | --- |\n"
                   % (name, spec["doc"][0].upper() + spec["doc"][1:]))
        for c in spec["columns"]:
            out.append("| `%s` | %s | %s |\n" % (c["name"], c["type"], c["doc"].replace("|", "\\|")))
        out.append("\n")
    return "".join(out)


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--schema-markdown"]:
        sys.stdout.write(schema_markdown())
    else:
        sys.exit("usage: python -m gpumemtrace.reader --schema-markdown")
