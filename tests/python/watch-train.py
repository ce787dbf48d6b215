"""A training loop on the simulated GPU with the PyTorch stand-in
(tests/python/standins): 1 GiB of weights, six 64 MiB activations a step
(freed), and a list that keeps one 96 MiB tensor a step (the leak), each
step a range "step N". Usage: watch-train.py STEPS [SECONDS_A_STEP].
scripts/watch-pane.sh runs it under `gpumemtrace watch` for the README's
picture."""
import sys
import time

import gpumemtrace
import torch

MiB = 1 << 20


def load_model():
    return [torch.cuda.empty(256 * MiB) for _ in range(4)]


def forward(batch):
    acts = [torch.cuda.empty(64 * MiB) for _ in range(batch)]
    for a in acts:
        torch.cuda.del_(a)


history = []


def train_step(step):
    forward(6)
    history.append(torch.cuda.empty(96 * MiB))  # kept: the loss, with its graph


model = load_model()
for step in range(1, int(sys.argv[1]) + 1):
    with gpumemtrace.range("step %d" % step):
        train_step(step)
    time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0.5)
