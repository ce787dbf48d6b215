"""tensorflow.python.eager.context stand-in (shapes: tensorflow/__init__.py)."""
import _simcuda


class Context:
    def __init__(self):
        self._initialized = False
        self.cache = None

    def ensure_initialized(self):
        if not self._initialized:
            self.cache = _simcuda.Cache(2 << 20)
            self._initialized = True
        return self

    def alloc(self, nbytes):
        from tensorflow import config

        limit = config.limit_bytes()
        if limit is not None and self.cache.allocated + nbytes > limit:
            return None  # BFC's memory_limit: no driver call
        return self.cache.alloc(nbytes)


_context = None


def context():
    global _context
    if _context is None:
        _context = Context()
    return _context


def context_safe():
    return _context
