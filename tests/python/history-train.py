"""A training-like program on the stand-in torch (tests/python/standins) for
t-api-framework-history: argv[1] names the case. Its output is the same
traced or not, with the history helper or without.

- leak: every step makes activations and frees them, and keeps one 1 MiB
  tensor (a tensor-level leak under the cache: the segments grow by 20 MiB
  now and then, the tensors by 1 MiB a step);
- oom: a working set, then a request the device cannot hold (caught);
- own: the program records its own history first (its settings win) and
  turns it off at the end (which would wipe ours).
"""
import sys

import torch

MiB = 1 << 20
case = sys.argv[1]


def step(keep):
    acts = [torch.cuda.empty(3 * MiB) for _ in range(4)]  # forward
    grads = [torch.cuda.empty(600 * 1024) for _ in range(3)]  # backward, small pool
    keep.append(torch.cuda.empty(1 * MiB + 4096))  # the leak: a large-pool tensor a step
    for t in acts + grads:
        torch.cuda.del_(t)


if case == "own":
    torch.cuda.memory._record_memory_history(max_entries=50)  # pylint: disable=protected-access
keep = []
weights = torch.cuda.empty(12 * MiB)
for _ in range(30):
    step(keep)
if case == "oom":
    try:
        torch.cuda.empty(4 << 30)
    except torch.cuda.OutOfMemoryError as err:
        print("oom:", err)
if case == "own":
    torch.cuda.memory._record_memory_history(enabled=None)  # pylint: disable=protected-access
print("kept", len(keep))
