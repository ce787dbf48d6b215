"""jax._src.xla_bridge stand-in (shapes: jax/__init__.py)."""
import _simcuda

_backends = {}
POOL = 64 << 20


class Device:
    platform = "gpu"
    id = 0
    local_hardware_id = 0

    def __init__(self):
        self.ptr = _simcuda.malloc(POOL)
        self.in_use = self.peak = self.num_allocs = self.largest = 0

    def place(self, nbytes):
        if self.in_use + nbytes > POOL:  # XLA's MemoryAllocationError (§3.2)
            from jax.errors import JaxRuntimeError

            raise JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
                                  "%d bytes." % nbytes, 8, "RESOURCE_EXHAUSTED")
        self.in_use += nbytes
        self.num_allocs += 1
        self.largest = max(self.largest, nbytes)
        self.peak = max(self.peak, self.in_use)
        return nbytes

    def memory_stats(self):
        return {"num_allocs": self.num_allocs, "bytes_in_use": self.in_use,
                "peak_bytes_in_use": self.peak, "largest_alloc_size": self.largest,
                "bytes_limit": POOL, "bytes_reserved": 0, "peak_bytes_reserved": 0,
                "largest_free_block_bytes": POOL - self.in_use,
                "pool_bytes": POOL, "peak_pool_bytes": POOL}


class Backend:
    def __init__(self):
        self.devs = [Device()]

    def local_devices(self):
        return self.devs


def backends():
    if not _backends:
        _backends["cuda"] = Backend()
    return _backends
