"""A one-process NCCL communicator and an all_reduce, for scripts/gpu-check.sh.

NCCL's own buffers (its proxy, channels, the cuMem-backed ones under
NCCL_CUMEM_ENABLE) reach the driver through cuGetProcAddress; the trace must
charge them to libnccl.
"""
import json
import os

import torch
import torch.distributed as dist


def main():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29512")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    t = torch.ones(16 << 20, device="cuda")  # 64 MiB
    dist.all_reduce(t)
    torch.cuda.synchronize()
    ok = bool(torch.all(t == 1.0))
    nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
    dist.destroy_process_group()
    print("RESULT " + json.dumps({"ok": ok, "nccl": nccl,
                                  "max_memory_reserved": torch.cuda.max_memory_reserved()}), flush=True)


if __name__ == "__main__":
    main()
