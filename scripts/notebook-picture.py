"""The README's picture of the %%gpumemtrace cell magic: a notebook run
headless (nbclient) in the traced kernel (`python -m gpumemtrace kernel
install`, into a temporary prefix) on the simulated CUDA, with the PyTorch
stand-in (tests/python/standins) as an installed torch; the magic's cell
and its real outputs (the text, the inline SVG timeline, the sites table)
drawn as a notebook shows them, into docs/images/notebook.svg, then PNG
with rsvg-convert.
    build/pyvenv/bin/python scripts/notebook-picture.py [OUT.png]
"""
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile

import nbclient
import nbformat

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))

CELLS = [
    "%load_ext gpumemtrace",
    '''import torch

def make_batch(n):
    return [torch.cuda.empty(64 << 20) for _ in range(n)]''',
    '''%%gpumemtrace
weights = [torch.cuda.empty(256 << 20) for _ in range(2)]
acts = make_batch(6)
for a in acts:
    torch.cuda.del_(a)
cache = torch.cuda.empty(96 << 20)   # kept
torch.cuda.empty_cache()''',
]


def run(work):
    lib = os.path.join(work, "lib", "site-packages")
    shutil.copytree(os.path.join(ROOT, "tests", "python", "standins"), lib)
    env = dict(os.environ, PYTHONPATH=lib + ":" + os.path.join(ROOT, "python"),
               LD_LIBRARY_PATH=os.path.join(BUILD, "sim"),
               GPUMEMTRACE_LIBRARY=os.path.join(BUILD, "libgpumemtrace.so"),
               GPUMEMTRACE_CLI=os.path.join(BUILD, "gpumemtrace"),
               GPUMEMTRACE_READER_LIBRARY=os.path.join(BUILD, "libgpumemtrace-reader.so"),
               JUPYTER_PATH=os.path.join(work, "prefix", "share", "jupyter"))
    subprocess.run([sys.executable, "-m", "gpumemtrace", "kernel", "install", "--prefix",
                    os.path.join(work, "prefix"), "--name", "gmt-picture"], env=env, check=True)
    os.environ.update(env)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nbclient.NotebookClient(nb, kernel_name="gmt-picture", timeout=120,
                            resources={"metadata": {"path": work}}).execute()
    return nb.cells[-1]


def esc(s):
    return html.escape(s, quote=True)


def picture(cell):
    sites = [line.split(None, 3)[-1] for o in cell.outputs
             for line in o.get("data", {}).get("text/plain", "").splitlines()[2:]]
    width, y, out = max([860] + [320 + 8 * len(t) for t in sites]), 14, []
    mono = "font-family='DejaVu Sans Mono, monospace' font-size='13'"
    sans = "font-family='DejaVu Sans, sans-serif' font-size='13'"
    src = cell.source.splitlines()
    h = 18 * len(src) + 12
    out.append("<text x='8' y='%d' %s fill='#303f9f'>In [%d]:</text>" % (y + 16, mono,
                                                                         cell.execution_count))
    out.append("<rect x='76' y='%d' width='%d' height='%d' fill='#f7f7f7' stroke='#cfcfcf'/>"
               % (y, width - 84, h))
    for i, line in enumerate(src):
        out.append("<text x='84' y='%d' %s xml:space='preserve'>%s</text>"
                   % (y + 20 + 18 * i, mono, esc(line)))
    y += h + 10
    for o in cell.outputs:
        if o.output_type == "stream":
            for line in o.text.splitlines():
                out.append("<text x='84' y='%d' %s xml:space='preserve'>%s</text>"
                           % (y + 14, mono, esc(line)))
                y += 18
        elif o.output_type == "display_data" and "text/html" in o.data:
            page = o.data["text/html"]
            head = re.search(r"<p><b>(.*?)</b></p>", page).group(1)
            out.append("<text x='84' y='%d' %s font-weight='bold'>%s</text>" % (y + 14, sans, head))
            y += 24
            svg = re.search(r"<svg.*?</svg>", page, re.S).group(0)
            sw, sh = (int(v) for v in re.search(r"width='(\d+)' height='(\d+)'", svg).groups())
            out.append("<g transform='translate(84,%d)'>%s</g>" % (y, svg.replace(
                "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d'" % (sw, sh),
                "<svg width='%d' height='%d'" % (sw, sh))))
            y += sh + 8
            cols = re.findall(r"<tr>(.*?)</tr>", page, re.S)
            for r in cols:
                cells = [re.sub(r"<.*?>", "", c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r)]
                weight = " font-weight='bold'" if "<th" in r else ""
                xs = (84, 214, 310)
                for x, c in zip(xs, cells):
                    out.append("<text x='%d' y='%d' %s%s>%s</text>"
                               % (x, y + 14, sans if weight else mono, weight, c))
                y += 20
    y += 10
    return ("<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d'>"
            "<rect width='100%%' height='100%%' fill='white'/>%s</svg>\n"
            % (width, y, "".join(out)))


def main():
    png = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "images",
                                                             "notebook.png")
    with tempfile.TemporaryDirectory() as work:
        cell = run(work)
    svg = picture(cell)
    svg_path = os.path.splitext(png)[0] + ".svg"
    with open(svg_path, "w", encoding="utf-8") as f:
        f.write(svg)
    subprocess.run(["rsvg-convert", "-o", png, svg_path], check=True)
    print(png)


if __name__ == "__main__":
    main()
