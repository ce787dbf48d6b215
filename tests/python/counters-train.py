"""A training-like program on a framework stand-in (tests/python/standins)
for t-api-framework-counters: argv[1] is torch, jax, tensorflow or none.
Its output is the same traced or not, with the counters helper or without.

With WAIT_READINGS=n (set only where the helper runs), the torch program
waits, where it would otherwise sleep through sampling periods, until the
helper has taken n readings (the stand-in counts its memory_stats() calls):
whether a reading exists never depends on how busy the machine is."""
import os
import sys
import time

fw = sys.argv[1]
MiB = 1 << 20


def wait_readings(cuda, base):
    """Until the helper's thread has read the counters WAIT_READINGS times
    since `base` readings (bounded: a helper that stopped fails the test's
    checks, not its time limit)."""
    want = base + int(os.environ.get("WAIT_READINGS", "0"))
    for _ in range(12000):
        if cuda.stats_calls >= want:
            return
        time.sleep(0.005)


if fw == "fork":  # torch set up, then a child that keeps using it
    import torch

    keep = torch.cuda.empty(8 * MiB)
    base = torch.cuda.stats_calls
    pid = os.fork()
    if pid == 0:
        child = torch.cuda.empty(2 * MiB)
        # One reading more than asked: the helper's thread records a
        # reading after its memory_stats() call and before its next one,
        # so the one before the last counted is in the trace before
        # os._exit (waiting for the last one itself lost it under load).
        wait_readings(torch.cuda, base + 1)
        print("child done")
        sys.stdout.flush()
        os._exit(0)
    os.waitpid(pid, 0)
    wait_readings(torch.cuda, base)
elif fw == "torch":
    import torch

    keep = [torch.cuda.empty(8 * MiB) for _ in range(3)]  # one 24 MiB segment
    gone = torch.cuda.empty(6 * MiB)
    torch.cuda.del_(gone)  # its bytes stay in the cache
    wait_readings(torch.cuda, 0)
    try:
        torch.cuda.empty(4 << 30)  # more than the device
    except torch.cuda.OutOfMemoryError as err:
        print("oom:", err)
    time.sleep(0.1)
elif fw == "jax":
    import jax

    xs = [jax.zeros(10 * MiB) for _ in range(2)]
    time.sleep(0.3)
elif fw == "tensorflow":
    import tensorflow as tf

    xs = [tf.zeros(3 * MiB) for _ in range(2)]
    time.sleep(0.3)
else:
    import _simcuda

    p = _simcuda.malloc(MiB)
    time.sleep(0.2)
    _simcuda.free(p)
# the program sees its own sitecustomize, as without the helper
print("done", fw, getattr(sys.modules.get("sitecustomize"), "__file__", None))
