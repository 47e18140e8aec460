"""Read a GGUF file fast: metadata, tensor index, and tensor bytes.

The `gguf` package's `GGUFReader` builds a Python object for every field part, which
takes ~24 s on Gemma 3's 262,144-entry vocabulary. This reader parses the same format
(https://github.com/ggml-org/ggml/blob/master/docs/gguf.md) in well under a second:
numeric arrays become numpy arrays in one call, string arrays are decoded in one loop,
and tensor data stays on disk behind a memory map until it is dequantized. The pages a read
touched count in the process's resident memory until `drop_pages` hands them back (a server that
keeps the reader open for later checks would otherwise hold the whole file, ~250 MB, resident).

Dequantization itself is delegated to `gguf.quants.dequantize` (Q4_K, Q6_K, ...).
"""
from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GGUF_MAGIC = b"GGUF"

# GGUF metadata value types -> numpy dtype (scalars and numeric arrays).
_NUMERIC = {0: np.uint8, 1: np.int8, 2: np.uint16, 3: np.int16, 4: np.uint32, 5: np.int32,
            6: np.float32, 7: np.bool_, 10: np.uint64, 11: np.int64, 12: np.float64}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]   # numpy order (outermost first), i.e. GGUF dims reversed
    ggml_type: int           # gguf.GGMLQuantizationType value
    offset: int              # absolute byte offset in the file
    n_bytes: int


class _Cursor:
    """Sequential little-endian reads over a bytes-like buffer."""

    def __init__(self, buf: memoryview):
        self.buf, self.pos = buf, 0

    def scalar(self, fmt: str):
        (v,) = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def string(self) -> str:
        n = self.scalar("Q")
        s = bytes(self.buf[self.pos:self.pos + n]).decode("utf-8", errors="replace")
        self.pos += n
        return s

    def array(self, dtype, count: int) -> np.ndarray:
        a = np.frombuffer(self.buf, dtype=dtype, count=count, offset=self.pos).copy()
        self.pos += a.nbytes
        return a

    def value(self, vtype: int):
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            item_type, count = self.scalar("I"), self.scalar("Q")
            if item_type == _STRING:
                return [self.string() for _ in range(count)]
            if item_type == _ARRAY:
                return [self.value(_ARRAY) for _ in range(count)]
            return self.array(_NUMERIC[item_type], count)
        v = self.array(_NUMERIC[vtype], 1)[0]
        return v.item()


class GGUFFile:
    """A parsed GGUF file. `metadata` maps keys to Python values / numpy arrays;
    `tensors` maps names to TensorInfo; `raw(name)` is the on-disk bytes of one tensor."""

    def __init__(self, path: str | Path):
        import gguf  # only for the block-size table of quantization types

        self.path = Path(path)
        with open(self.path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)     # read on demand
        self._mm = np.frombuffer(self._map, dtype=np.uint8)                     # (file bytes,) read-only view
        cur = _Cursor(memoryview(self._mm))
        if bytes(cur.buf[:4]) != GGUF_MAGIC:
            raise ValueError(f"{self.path} is not a GGUF file (bad magic)")
        cur.pos = 4
        self.version = cur.scalar("I")
        if self.version < 2:
            raise ValueError(f"GGUF version {self.version} is not supported")
        n_tensors, n_kv = cur.scalar("Q"), cur.scalar("Q")
        self.metadata: dict[str, object] = {}
        for _ in range(n_kv):
            key = cur.string()
            self.metadata[key] = cur.value(cur.scalar("I"))
        infos = []
        for _ in range(n_tensors):
            name = cur.string()
            n_dims = cur.scalar("I")
            dims = [cur.scalar("Q") for _ in range(n_dims)]
            infos.append((name, tuple(reversed(dims)), cur.scalar("I"), cur.scalar("Q")))
        align = int(self.metadata.get("general.alignment", 32))
        data_start = (cur.pos + align - 1) // align * align
        self.tensors: dict[str, TensorInfo] = {}
        for name, shape, gtype, rel in infos:
            block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(gtype)]
            n_elem = int(np.prod(shape))
            self.tensors[name] = TensorInfo(name, shape, gtype, data_start + rel,
                                            n_elem // block * type_size)

    def raw(self, name: str) -> np.ndarray:
        """The tensor's bytes as stored (quantized blocks), without copying."""
        t = self.tensors[name]
        return self._mm[t.offset:t.offset + t.n_bytes]

    def drop_pages(self, name: str | None = None) -> None:
        """Hand back the pages of tensor `name` (None: the whole file) that reads brought into
        this process's resident memory. The operating system keeps them in its file cache, so a
        later read is still fast; arrays already dequantized are copies and stay valid. Does
        nothing where madvise is unavailable."""
        if not hasattr(self._map, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
            return
        start, stop = (0, len(self._map)) if name is None else (
            self.tensors[name].offset, self.tensors[name].offset + self.tensors[name].n_bytes)
        start -= start % mmap.PAGESIZE                          # madvise starts on a page boundary
        if stop > start:
            self._map.madvise(mmap.MADV_DONTNEED, start, stop - start)

    def dequantize(self, name: str) -> np.ndarray:
        """The tensor as float32, shape `TensorInfo.shape`."""
        return self.dequantize_rows(name, 0, self.tensors[name].shape[0])

    def dequantize_rows(self, name: str, start: int, stop: int) -> np.ndarray:
        """Rows start..stop-1 of the tensor's first axis as float32, shape (stop - start, ...).

        Quantization blocks never cross a row of the last axis, so a row range reads only its
        own bytes: a large tensor (the 262,144 x 640 embedding, 671 MB as float32) can be
        converted a slice at a time, with the same values as `dequantize`."""
        import gguf

        t = self.tensors[name]
        stop = min(stop, t.shape[0])
        qtype = gguf.GGMLQuantizationType(t.ggml_type)
        if len(t.shape) == 1 and qtype != gguf.GGMLQuantizationType.F32:   # one row of blocks
            return gguf.quants.dequantize(self.raw(name).reshape(1, -1), qtype).reshape(-1)[start:stop].astype(np.float32)
        inner = int(np.prod(t.shape[1:], dtype=np.int64))           # elements per outer row
        outer_bytes = t.n_bytes // t.shape[0]
        raw = self.raw(name)[start * outer_bytes:stop * outer_bytes]
        shape = (stop - start, *t.shape[1:])
        if qtype == gguf.GGMLQuantizationType.F32:
            return np.frombuffer(raw, dtype=np.float32).reshape(shape).copy()
        n_rows = (stop - start) * inner // t.shape[-1]               # rows of the last axis
        out = gguf.quants.dequantize(raw.reshape(n_rows, -1), qtype)
        return out.reshape(shape).astype(np.float32, copy=False)
