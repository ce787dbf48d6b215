"""A stand-in for JAX in t-api-framework-counters: the shapes of the APIs
the counters helper (python/gpumemtrace/_counters/sitecustomize.py) calls.

- jax.devices() starts the backends (the GPU one preallocates its pool:
  XLA_PYTHON_CLIENT_PREALLOCATE, 75% of the device by default); until then
  jax._src.xla_bridge._backends is empty (the helper waits for it).
- Device.memory_stats() -> dict of int from the allocator's
  tsl::AllocatorStats: "bytes_in_use", "peak_bytes_in_use", "num_allocs",
  "largest_alloc_size", "bytes_limit", "bytes_reserved",
  "peak_bytes_reserved", "largest_free_block_bytes", "pool_bytes",
  "peak_pool_bytes"; None where unsupported (CPU).
  https://jax.readthedocs.io/en/latest/_autosummary/jax.Device.html
  (xla/pjrt/pjrt_client.h, PjRtDevice::GetAllocatorStats;
  tsl/framework/allocator.h, AllocatorStats)
- jax.errors.JaxRuntimeError (module jax.errors): a full pool
  raises it with error_code 8 and "RESOURCE_EXHAUSTED: Out of memory while
  trying to allocate N bytes." (framework-view.md §3.1, §3.2).
Here the pool is 64 MiB (the sim's device is small). Test-only:
jax.zeros(nbytes) places an array in the pool.
"""
from jax import errors  # noqa: F401
from jax._src import xla_bridge


def devices():
    return xla_bridge.backends()["cuda"].local_devices()


def zeros(nbytes):
    return devices()[0].place(nbytes)
