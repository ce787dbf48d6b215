"""tf.config stand-in (shapes: tensorflow/__init__.py)."""
import collections

from tensorflow.python.eager import context

LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])
PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDeviceConfiguration = collections.namedtuple(
    "LogicalDeviceConfiguration", ["memory_limit", "experimental_priority",
                                   "experimental_device_ordinal"], defaults=(None, None, None))
_configs = {}


def list_physical_devices(device_type=None):
    if device_type not in (None, "GPU"):
        return []
    return [PhysicalDevice("/physical_device:GPU:0", "GPU")]


def set_logical_device_configuration(device, logical_devices):
    _configs[device.name] = list(logical_devices)


def get_logical_device_configuration(device):
    return _configs.get(device.name)


def limit_bytes():
    confs = _configs.get("/physical_device:GPU:0")
    return confs[0].memory_limit << 20 if confs and confs[0].memory_limit else None


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
