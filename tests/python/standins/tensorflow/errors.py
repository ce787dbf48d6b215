"""tf.errors stand-in (shapes: tensorflow/__init__.py)."""
from tensorflow.python.framework.errors_impl import OpError, ResourceExhaustedError  # noqa: F401
