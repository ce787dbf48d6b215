"""cupy.cuda.memory stand-in (shapes: cupy/__init__.py)."""
import _simcuda


class OutOfMemoryError(MemoryError):
    def __init__(self, size, total, limit=0):
        self._size, self._total, self._limit = size, total, limit
        if total == -1:
            msg = "Out of memory allocating {:,} bytes".format(size)
        elif limit:
            msg = ("Out of memory allocating {:,} bytes (allocated so far: {:,} bytes, limit "
                   "set to: {:,} bytes).".format(size, total, limit))
        else:
            msg = "Out of memory allocating {:,} bytes (allocated so far: {:,} bytes).".format(
                size, total)
        super().__init__(msg)


class MemoryPool:
    def __init__(self, limit=0):
        self._limit = limit
        self._chunks = []  # [ptr, size, used]

    def used_bytes(self):
        return sum(c[1] for c in self._chunks if c[2])

    def total_bytes(self):
        return sum(c[1] for c in self._chunks)

    def free_bytes(self):
        return self.total_bytes() - self.used_bytes()

    def get_limit(self):
        return self._limit

    def set_limit(self, size=None, fraction=None):
        self._limit = size or 0

    def free_all_blocks(self, stream=None):
        for c in [c for c in self._chunks if not c[2]]:
            _simcuda.free(c[0])
            self._chunks.remove(c)

    def malloc(self, nbytes):
        size = (nbytes + 511) // 512 * 512
        for c in self._chunks:
            if not c[2] and c[1] == size:
                c[2] = 1
                return c
        if self._limit and self.total_bytes() + size > self._limit:
            self.free_all_blocks()  # then the limit decides, before any driver call
            if self.total_bytes() + size > self._limit:
                raise OutOfMemoryError(size, self.total_bytes(), self._limit)
        ptr = _simcuda.malloc(size)
        if ptr is None:
            self.free_all_blocks()
            ptr = _simcuda.malloc(size)
        if ptr is None:
            raise OutOfMemoryError(size, self.total_bytes(), self._limit)
        c = [ptr, size, 1]
        self._chunks.append(c)
        return c

    def release(self, chunk):
        chunk[2] = 0
