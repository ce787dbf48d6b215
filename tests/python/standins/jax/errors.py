"""jax.errors stand-in (shapes: jax/__init__.py)."""
from jaxlib._jax import JaxRuntimeError  # noqa: F401
