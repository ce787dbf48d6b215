"""CuPy's device memory pool and its pinned memory pool, for
scripts/gpu-check.sh: the pool's own view beside what the trace saw."""
import json

import cupy as cp


def main():
    pool = cp.get_default_memory_pool()
    pinned = cp.get_default_pinned_memory_pool()
    arrays = [cp.ones((n, 1024), dtype=cp.float32) for n in (256, 1024, 4096)]  # 1, 4, 16 MiB
    total = sum(int(a.sum()) for a in arrays)
    del arrays[1]  # back to the pool, not to the driver
    host = [cp.cuda.alloc_pinned_memory(n << 20) for n in (1, 3)]
    result = {
        "cupy": cp.__version__,
        "sum": total,
        "pool_used": pool.used_bytes(),
        "pool_total": pool.total_bytes(),
        "pinned_free_blocks": pinned.n_free_blocks(),
    }
    del host
    result["pinned_free_blocks_after"] = pinned.n_free_blocks()
    pool.free_all_blocks()
    result["pool_total_after_free_all"] = pool.total_bytes()
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
