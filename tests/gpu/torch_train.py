"""A small CNN trained for a few hundred steps, for scripts/gpu-check.sh.

Prints one line, RESULT {json}: PyTorch's own peaks, NVML's view of this
process, and the loop's wall time, so the checker can set them beside the
trace. The allocator is chosen from outside (PYTORCH_CUDA_ALLOC_CONF,
PYTORCH_NO_CUDA_MEMORY_CACHING).
"""
import json
import os
import time

import torch
import torch.nn as nn


def nvml_process_bytes():
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
            if proc.pid == os.getpid():
                return proc.usedGpuMemory
        return None
    except Exception as e:  # NVML is a witness here, never a requirement
        return "unavailable: %s" % e


def main():
    steps = int(os.environ.get("STEPS", "300"))
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(128 * 16 * 16, 512), nn.ReLU(), nn.Linear(512, 10),
    ).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def step(i):
        torch.cuda.nvtx.range_push("train_step")
        # Varying batch sizes make the caching allocator split and grow.
        batch = 64 + 32 * (i % 4)
        x = torch.randn(batch, 3, 64, 64, device=dev)
        y = torch.randint(0, 10, (batch,), device=dev)
        torch.cuda.nvtx.range_push("forward")
        loss = loss_fn(model(x), y)
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("backward")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.cuda.nvtx.range_pop()
        opt.step()
        torch.cuda.nvtx.range_pop()
        return loss

    for i in range(10):  # warm-up: cuDNN autotuning, cuBLAS handles, lazy modules
        step(i)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(steps):
        loss = step(i)
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t0
    print("RESULT " + json.dumps({
        "steps": steps,
        "loop_s": loop_s,
        "loss": float(loss),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "memory_reserved_end": torch.cuda.memory_reserved(),
        "nvml_process_bytes": nvml_process_bytes(),
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "no_caching": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", ""),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
    }), flush=True)


if __name__ == "__main__":
    main()
