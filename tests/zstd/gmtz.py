#!/usr/bin/env python3
"""Test tool: rewrites a trace's chunks as GMTZ (zstd) chunks, through the
same libzstd.so.1 the tracer loads (ctypes), and damages them on request.

  gmtz.py compress IN OUT             every chunk compressed (even if larger),
                                      the header's version raised to 3
  gmtz.py damage IN OUT HOW           the largest GMTZ chunk damaged (a
                                      small one's frame may hold its bytes
                                      raw, where a flipped byte still
                                      decodes), its CRC recomputed so only
                                      the zstd layer is wrong; prints its
                                      offset. HOW: magic (the frame's magic),
                                      frame (a byte mid-frame), cut (the
                                      frame's last 8 bytes gone), rawlen
                                      (raw_len + 1)
  gmtz.py bomb IN OUT N               IN (plain chunks, no trailer) followed
                                      by N GMTZ chunks of 16 MiB each when
                                      decompressed, each one EVENTS record
                                      of 2,097,150 cudaMalloc events (4 KiB,
                                      a new pointer each) that zstd packs
                                      into about a kilobyte: a
                                      decompression bomb
"""
import ctypes
import struct
import sys

CHUNK = 0x43544D47
ZCHUNK = 0x5A544D47


def _table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        t.append(c)
    return t


TABLE = _table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = (crc >> 8) ^ TABLE[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def chunks(data):
    hsize = struct.unpack_from("<H", data, 10)[0]
    off = hsize
    while off + 16 <= len(data):
        magic, ln, seq, crc = struct.unpack_from("<IIII", data, off)
        yield off, magic, seq, data[off + 16 : off + 16 + ln]
        off += 16 + ln


def chunk(magic, seq, payload):
    return struct.pack("<IIII", magic, len(payload), seq, crc32c(payload)) + payload


def main():
    cmd, src, dst = sys.argv[1:4]
    data = open(src, "rb").read()
    hsize = struct.unpack_from("<H", data, 10)[0]
    out = bytearray(data[:hsize])
    if cmd == "bomb":
        if struct.unpack_from("<H", out, 8)[0] < 3:
            struct.pack_into("<H", out, 8, 3)
        out = bytearray(data)
        seq = sum(1 for _ in chunks(data))
        n = (16 * 1024 * 1024 - 16) // 8
        # head api 40 (cudaMalloc), dt 1, dptr +0x1000, size 4096, dstk 0
        ev = varint(40 << 4) + varint(1) + varint(0x1000 << 1) + varint(4096) + varint(0)
        assert len(ev) == 8
        raw = varint(6) + varint(1) + varint(1000) + varint(n) + ev * n
        assert len(raw) <= 16 * 1024 * 1024
        z = _zstd()
        cap = z.ZSTD_compressBound(len(raw))
        buf = ctypes.create_string_buffer(cap)
        k = z.ZSTD_compress(buf, cap, raw, len(raw), 19)
        for i in range(int(sys.argv[4])):
            out += chunk(ZCHUNK, seq + i, varint(len(raw)) + buf.raw[:k])
    elif cmd == "compress":
        if struct.unpack_from("<H", out, 8)[0] < 3:  # GMTZ is version 3
            struct.pack_into("<H", out, 8, 3)
        z = _zstd()
        for _, magic, seq, p in chunks(data):
            assert magic == CHUNK, "input must be uncompressed"
            cap = z.ZSTD_compressBound(len(p))
            buf = ctypes.create_string_buffer(cap)
            n = z.ZSTD_compress(buf, cap, p, len(p), 1)
            out += chunk(ZCHUNK, seq, varint(len(p)) + buf.raw[:n])
    elif cmd == "damage":
        how, seen = sys.argv[4], 0
        sizes = [(len(p), off) for off, magic, _, p in chunks(data) if magic == ZCHUNK]
        target = max(sizes)[1] if sizes else -1
        for off, magic, seq, p in chunks(data):
            if magic == ZCHUNK:
                seen += 1
                if off == target:
                    print(off)
                    p = bytearray(p)
                    i = 0
                    while p[i] & 0x80:
                        i += 1
                    if how == "magic":
                        p[i + 1] ^= 0xFF
                    elif how == "frame":
                        # The first block's type made "reserved", which zstd
                        # must refuse. Not a byte mid-payload: one in a raw
                        # literals block decodes silently (no frame checksum;
                        # the chunk CRC, rewritten here, is what catches it),
                        # and CI once drew such a byte.
                        fhd = p[i + 5]
                        single = fhd >> 5 & 1
                        fcs = [single, 2, 4, 8][fhd >> 6]
                        block = i + 6 + (not single) + [0, 1, 2, 4][fhd & 3] + fcs
                        p[block] |= 0x06
                    elif how == "cut":
                        p = p[:-8]
                    else:  # raw_len + 1
                        p = bytearray(varint(decode(p) + 1)) + p[i + 1 :]
                    p = bytes(p)
            out += chunk(magic, seq, p)
        assert seen >= 2, "needs two GMTZ chunks"
    open(dst, "wb").write(out)


def _zstd():
    z = ctypes.CDLL("libzstd.so.1")
    z.ZSTD_compressBound.restype = ctypes.c_size_t
    z.ZSTD_compress.restype = ctypes.c_size_t
    z.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                ctypes.c_size_t, ctypes.c_int]
    return z


def decode(p):
    n, shift = 0, 0
    for b in p:
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n
    raise ValueError("bad varint")


if __name__ == "__main__":
    main()
