#!/usr/bin/env python3
"""List C function lengths (signature line to closing brace), longest first.

usage: scripts/func-lengths.py [-n MIN] FILE_OR_DIR...
A top-level '{' whose preceding text holds a '(' and no '=' opens a function;
good enough for this tree's clang-formatted sources.
"""
import os
import re
import sys


def strip(src):
    """Blank out comments, strings and char literals, keeping newlines."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", src[i + 1 : j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    src = strip(open(path, encoding="utf-8", errors="replace").read())
    src = re.sub(r"(?m)^[ \t]*#.*(\\\n.*)*$", lambda m: re.sub(r"[^\n]", " ", m.group(0)), src)
    depth, head, start = 0, 0, None
    for i, c in enumerate(src):
        if c == "{":
            if depth == 0:
                text = src[head:i]
                m = re.search(r"([A-Za-z_]\w*)\s*\(", text)
                if m and "=" not in text.split("(")[0]:
                    start = (m.group(1), src.count("\n", 0, head + m.start()) + 1)
                else:
                    start = None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if start:
                    end = src.count("\n", 0, i) + 1
                    yield start[0], start[1], end - start[1] + 1
                start, head = None, i + 1
        elif c == ";" and depth == 0:
            head = i + 1


def main(argv):
    minimum = 0
    if len(argv) > 1 and argv[0] == "-n":
        minimum, argv = int(argv[1]), argv[2:]
    files = []
    for a in argv or ["."]:
        if os.path.isdir(a):
            for d, _, names in os.walk(a):
                files += [os.path.join(d, f) for f in names if f.endswith(".c")]
        else:
            files.append(a)
    rows = [(n, f"{p}:{line}", name) for p in sorted(files) for name, line, n in functions(p)]
    for n, where, name in sorted(rows, key=lambda r: (-r[0], r[1])):
        if n >= minimum:
            print(f"{n:5d}  {name:32s} {where}")


if __name__ == "__main__":
    main(sys.argv[1:])
