"""tf.config stand-in (shapes: tensorflow/__init__.py)."""
import collections

from tensorflow.python.eager import context

LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])


def list_logical_devices(device_type=None):
    context.context().ensure_initialized()
    if device_type not in (None, "GPU"):
        return []
    return [LogicalDevice("/device:GPU:0", "GPU")]


class experimental:  # pylint: disable=invalid-name
    @staticmethod
    def get_memory_info(device):
        c = context.context().ensure_initialized()
        return {"current": c.cache.allocated, "peak": c.cache.peak_allocated}
