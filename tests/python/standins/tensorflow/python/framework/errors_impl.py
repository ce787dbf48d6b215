"""tensorflow.python.framework.errors_impl stand-in (shapes: tensorflow/__init__.py)."""


class OpError(Exception):
    def __init__(self, node_def, op, message, *args):
        super().__init__(message)
        self.node_def, self.op, self.message = node_def, op, message

    def __str__(self):
        return self.message


class ResourceExhaustedError(OpError):
    """tf.errors.ResourceExhaustedError(node_def, op, message)."""
