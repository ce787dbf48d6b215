"""A small training loop on the stand-in torch (tests/python/standins) that
leaks the classic way: it keeps every step's loss tensor (and so what the
loss holds on to) in a list, 6 MiB a step. Each step is in a
gpumemtrace.range, as NVTX ranges would be. For t-report-explain-order:
explain's first finding must be the leak."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import gpumemtrace  # noqa: E402
import torch  # noqa: E402

MiB = 1 << 20
weights = torch.cuda.empty(64 * MiB)
losses = []
for _ in range(40):
    with gpumemtrace.range("step"):
        acts = [torch.cuda.empty(8 * MiB) for _ in range(6)]  # forward
        losses.append(torch.cuda.empty(6 * MiB))  # the loss, kept with its graph
        for t in acts:
            torch.cuda.del_(t)
print("steps", len(losses))
