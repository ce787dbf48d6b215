"""Framework out-of-memory errors on the stand-ins (tests/python/standins),
for t-api-framework-oom: argv[1] names the scenario. Its output and exit
status are the same traced or not, with the helper or without.
SIMCUDA_CAPACITY=1G."""
import sys
import threading

MiB = 1 << 20
mode = sys.argv[1]


def torch_fill(torch, n, size):
    return [torch.cuda.empty(size) for _ in range(n)]


if mode == "torch-fragmented":
    # 6 MiB tensors: three share a 20 MiB segment (frameworks.md §1.2); the
    # device filled so, then two of each three dropped: 14 MiB free in every
    # segment, split, so the cache flush frees nothing, and 100 MiB fits no
    # block and no cudaMalloc
    import _simcuda
    import torch

    free, _ = _simcuda.mem_info()
    segs = free // (20 * MiB) - 1
    ts = torch_fill(torch, 3 * segs, 6 * MiB)
    for i, t in enumerate(ts):
        if i % 3:
            torch.cuda.del_(t)
    torch.cuda.empty(100 * MiB)
elif mode == "torch-caught":
    import torch

    keep = torch_fill(torch, 2, 8 * MiB)
    try:
        torch.cuda.empty(4 << 30)  # more than the device
    except torch.OutOfMemoryError:
        print("caught; going on with a smaller batch")
    keep.append(torch.cuda.empty(8 * MiB))
elif mode == "torch-fraction":
    import torch

    torch.cuda.set_per_process_memory_fraction(0.5)
    keep = torch_fill(torch, 30, 20 * MiB)  # 50% of 1 GiB holds 25 full segments
elif mode == "torch-replaced-hook":
    import torch

    sys.excepthook = lambda t, v, tb: print("the program's own hook:", t.__name__)
    torch.cuda.empty(4 << 30)
elif mode == "torch-chained":
    import torch

    try:
        torch.cuda.empty(4 << 30)
    except torch.OutOfMemoryError as err:
        raise RuntimeError("the training step failed") from err
elif mode == "jax":
    import jax

    xs = [jax.zeros(40 * MiB) for _ in range(2)]  # the pool holds 64 MiB
elif mode == "tf-thread":
    import tensorflow as tf

    def work():
        tf.zeros(2 << 30)  # more than the device

    t = threading.Thread(target=work)
    t.start()
    t.join()
    print("main goes on")
elif mode == "tf-limit":
    import tensorflow as tf

    gpu = tf.config.list_physical_devices("GPU")[0]
    tf.config.set_logical_device_configuration(
        gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=100)])
    xs = [tf.zeros(60 * MiB) for _ in range(2)]
elif mode == "cupy":
    import cupy

    xs = [cupy.zeros(300 * MiB) for _ in range(4)]
elif mode == "cupy-limit":  # CUPY_GPU_MEMORY_LIMIT=512M
    import cupy

    xs = [cupy.zeros(200 * MiB) for _ in range(3)]
print("done")
