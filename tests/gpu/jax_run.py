"""A small JAX training loop, for scripts/gpu-check.sh, run under each of
XLA's allocator policies (set from outside: XLA_PYTHON_CLIENT_PREALLOCATE,
XLA_PYTHON_CLIENT_ALLOCATOR)."""
import json
import os
import time

import jax
import jax.numpy as jnp


def main():
    key = jax.random.PRNGKey(0)
    k1, k2 = jax.random.split(key)
    w1 = jax.random.normal(k1, (1024, 2048)) * 0.02
    w2 = jax.random.normal(k2, (2048, 10)) * 0.02

    def loss(params, x, y):
        a, b = params
        logits = jnp.tanh(x @ a) @ b
        return jnp.mean((logits - y) ** 2)

    @jax.jit
    def step(params, x, y):
        g = jax.grad(loss)(params, x, y)
        return [p - 1e-3 * gp for p, gp in zip(params, g)]

    params = [w1, w2]
    t0 = time.perf_counter()
    held = []
    for i in range(100):
        batch = 256 * (1 + i % 4)
        x = jax.random.normal(jax.random.PRNGKey(i), (batch, 1024))
        y = jnp.zeros((batch, 10))
        params = step(params, x, y)
        if i % 10 == 0:
            held.append(jnp.ones((1 << 20,)) * i)  # 4 MiB kept: visible growth
    jax.block_until_ready(params)
    stats = jax.devices()[0].memory_stats() or {}
    print("RESULT " + json.dumps({
        "jax": jax.__version__,
        "loop_s": time.perf_counter() - t0,
        "preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", ""),
        "allocator": os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", ""),
        "peak_bytes_in_use": stats.get("peak_bytes_in_use"),
        "bytes_limit": stats.get("bytes_limit"),
        "bytes_reserved": stats.get("bytes_reserved"),
        "held": len(held),
    }), flush=True)


if __name__ == "__main__":
    main()
