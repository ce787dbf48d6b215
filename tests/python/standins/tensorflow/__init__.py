"""A stand-in for TensorFlow in t-api-framework-counters: the shapes of the
APIs the counters helper (python/gpumemtrace/_counters/sitecustomize.py) calls.

- tensorflow.python.eager.context.context_safe() -> the Context, or None;
  Context._initialized turns True once the runtime has made its devices
  (the first op, or tf.config.list_logical_devices); the helper waits for it.
- tf.config.list_logical_devices("GPU") -> [LogicalDevice(name=
  "/device:GPU:0", device_type="GPU")].
- tf.config.experimental.get_memory_info("GPU:0") -> {"current": int,
  "peak": int}, bytes in use by tensors on the device.
  https://www.tensorflow.org/api_docs/python/tf/config/experimental/get_memory_info
- tf.errors.ResourceExhaustedError (tensorflow.python.framework.
  errors_impl): "OOM when allocating tensor with shape[..] and type T on
  /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc" (§4).
- tf.config.list_physical_devices("GPU"), get/set_logical_device_configuration
  with LogicalDeviceConfiguration(memory_limit=MiB): a limit on the device.
Here the runtime grows (TF_FORCE_GPU_ALLOW_GROWTH) in regions of at least
2 MiB. Test-only: tf.zeros(nbytes) places a tensor.
"""
from tensorflow import config, errors  # noqa: F401
from tensorflow.python.eager import context


def zeros(nbytes):
    c = context.context().ensure_initialized()
    block = c.alloc(nbytes)
    if block is None:
        raise errors.ResourceExhaustedError(
            None, None, "OOM when allocating tensor with shape[%d] and type uint8 on "
            "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc" % nbytes)
    return block
