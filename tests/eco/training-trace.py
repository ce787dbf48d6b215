#!/usr/bin/env python3
"""Prints a mktrace script of a PyTorch-like training run, for the plot,
flamegraph and export tests and the README pictures: Python frames,
libraries, NVTX phases per step, NVML samples, and one OOM at the end.
Usage: training-trace.py [STEPS] | mktrace OUT"""
import sys

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
MiB = 1 << 20
ms = 1_000_000
out = []
w = out.append
w("header start_mono=0 pid=4242")
w('process pid=4242 ppid=1 host=gpu-node-07 exe=/usr/bin/python3.11 arg=python arg=train.py arg=--batch arg=64')
w("device ord=0 name=\"NVIDIA H100 80GB HBM3\" total=%d cc=9.0 driver=12040 uuid=00112233445566778899aabbccddeeff" % (80 << 30))
mods = [(1, 0x400000, "/usr/bin/python3.11"), (2, 0x7f0000000000, "/usr/lib/libcudart.so.12"),
        (3, 0x7f1000000000, "/opt/torch/lib/libtorch_cuda.so"), (4, 0x7f2000000000, "/usr/lib/libnccl.so.2"),
        (5, 0x7f3000000000, "/usr/lib/libcublasLt.so.12")]
for i, b, p in mods:
    w("module id=%d bias=%d start=%d end=%d path=%s" % (i, b, b, b + 0x100000, p))
PY = 0xfe00000000000000
pyf = {1: ("<module>", "train.py", 88), 2: ("train", "train.py", 52), 3: ("forward", "model.py", 31),
       4: ("backward", "torch/_tensor.py", 522), 5: ("step", "torch/optim/adamw.py", 210),
       6: ("load_model", "train.py", 20), 7: ("init_process_group", "torch/distributed/c10d.py", 1300),
       8: ("attention", "model.py", 77)}
for k, (f, fi, ln) in pyf.items():
    w("pyframe id=%d func=%s file=%s line=%d" % (k, f, fi, ln))
syms = [(0x7f1000000100, 3, "c10::cuda::CUDACachingAllocator::malloc", "CUDACachingAllocator.cpp", 1050),
        (0x7f2000000100, 4, "ncclCommInitRank", "init.cc", 1620),
        (0x7f3000000100, 5, "cublasLtMatmul", "", 0),
        (0x7f0000000100, 2, "cudaMalloc", "", 0)]
for ip, m, f, fi, ln in syms:
    w("symbol ip=%d module=%d func=%s%s%s" % (ip, m, f, " file=%s" % fi if fi else "", " line=%d" % ln if ln else ""))
# stacks, outermost first; node ids count up across lines
nid = [0]
def stack(ips):
    parts, parent = [], 0
    for ip in ips:
        parts.append("parent=%d ip=%d" % (parent, ip))
        nid[0] += 1
        parent = nid[0]
    w("stack " + " ".join(parts))
    return nid[0]
alloc = [0x7f1000000100, 0x7f0000000100]
S_load = stack([PY + 1, PY + 6] + alloc)
S_nccl = stack([PY + 1, PY + 7, 0x7f2000000100, 0x7f0000000100])
S_fwd = stack([PY + 1, PY + 2, PY + 3] + alloc)
S_attn = stack([PY + 1, PY + 2, PY + 3, PY + 8] + alloc)
S_bwd = stack([PY + 1, PY + 2, PY + 4] + alloc)
S_opt = stack([PY + 1, PY + 2, PY + 5] + alloc)
S_blas = stack([PY + 1, PY + 2, PY + 3, 0x7f3000000100, 0x7f0000000100])
w("thread tid=1 name=MainThread")
ev, rng, smp = [], [], []
ptr = [0x7f9000000000]
live = {}
def malloc(t, size, st):
    p = ptr[0]; ptr[0] += size + (2 * MiB)
    ev.append("ev api=cudaMalloc t=%d ptr=%d size=%d dev=0 stack=%d" % (t, p, size, st))
    live[p] = size
    return p
def free(t, p):
    ev.append("ev api=cudaFree t=%d ptr=%d dev=0" % (t, p))
    del live[p]
t = 50 * ms
malloc(t, 6200 * MiB, S_load); t += 40 * ms
malloc(t, 2048 * MiB, S_nccl); t += 20 * ms
malloc(t, 512 * MiB, S_blas); t += 30 * ms
opt_state = []
cache = []
for s in range(steps):
    rng.append("range tid=1 t=%d op=push text=\"step %d\"" % (t, s))
    rng.append("range tid=1 t=%d op=push text=forward" % t)
    acts = []
    for i in range(6):
        acts.append(malloc(t, (900 + 40 * s) * MiB if i % 2 else 1200 * MiB, S_attn if i % 2 else S_fwd)); t += 25 * ms
    rng.append("range tid=1 t=%d op=pop" % t)
    rng.append("range tid=1 t=%d op=push text=backward" % t)
    grads = []
    for i in range(4):
        grads.append(malloc(t, 1500 * MiB, S_bwd)); t += 20 * ms
        free(t, acts.pop()); t += 15 * ms
    for p in acts:
        free(t, p); t += 5 * ms
    rng.append("range tid=1 t=%d op=pop" % t)
    rng.append("range tid=1 t=%d op=push text=optimizer" % t)
    if not opt_state:
        opt_state = [malloc(t, 6200 * MiB, S_opt), malloc(t + ms, 6200 * MiB, S_opt)]; t += 10 * ms
    for p in grads:
        free(t, p); t += 8 * ms
    if s % 3 == 2:  # a slow leak: a cached buffer never freed
        cache.append(malloc(t, 256 * MiB, S_fwd)); t += 5 * ms
    rng.append("range tid=1 t=%d op=pop" % t)
    rng.append("range tid=1 t=%d op=pop" % t)
    t += 60 * ms
# the last step asks for too much
rng.append("range tid=1 t=%d op=mark text=\"eval\"" % t)
ev.append("ev api=cudaMalloc t=%d size=%d dev=0 stack=%d result=2" % (t, 70000 * MiB, S_attn)); t += 30 * ms
w("events tid=1")
out.extend(ev)
out.extend(rng)
# NVML: what nvidia-smi would show, context and cache included
cur, i, T = 0, 0, 0
sizes = [l for l in ev]
timeline = []
live2 = {}
for l in ev:
    d = dict(kv.split("=", 1) for kv in l.split()[1:])
    if "result" in d: continue
    if d["api"] == "cudaMalloc": live2[d["ptr"]] = int(d["size"])
    else: live2.pop(d["ptr"], None)
    timeline.append((int(d["t"]), sum(live2.values())))
j, cur = 0, 0
for ts in range(0, t, 100 * ms):
    while j < len(timeline) and timeline[j][0] <= ts:
        cur = max(cur, timeline[j][1]); j += 1
    out.append("sample t=%d used=%d total=%d uuid=00112233445566778899aabbccddeeff process=%d" % (ts, cur + 900 * MiB, 80 << 30, cur + 600 * MiB))
out.append("trailer t=%d" % (t + 20 * ms))
print("\n".join(out))
