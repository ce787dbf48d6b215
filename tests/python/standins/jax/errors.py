"""jax.errors stand-in (shapes: jax/__init__.py)."""


class JaxRuntimeError(RuntimeError):
    """jax.errors.JaxRuntimeError (module jax.errors in jax 0.10.2), a
    RuntimeError with error_code / error_code_string / error_message
    (framework-view.md §3.1; 8 is RESOURCE_EXHAUSTED)."""

    def __init__(self, message, code=2, code_string="UNKNOWN"):
        super().__init__(message)
        self._code, self._code_string, self._message = code, code_string, message

    @property
    def error_code(self):
        return self._code

    @property
    def error_code_string(self):
        return self._code_string

    @property
    def error_message(self):
        return self._message
