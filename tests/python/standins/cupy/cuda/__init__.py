"""cupy.cuda stand-in (shapes: cupy/__init__.py)."""
from cupy.cuda import memory, runtime  # noqa: F401
