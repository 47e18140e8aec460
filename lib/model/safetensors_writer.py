"""Write a .safetensors file one tensor (or one row range of a tensor) at a time.

`safetensors.torch.save_file` needs every tensor in memory at once: for the bundled model that
is 1.07 GB per file, on top of whatever produced it. This writer lays the file out first (the
header lists every tensor's dtype, shape and byte range) and then accepts the data in any order
and in pieces, so a converter can hold one tensor, or one slice of a large one, at a time.

Byte-identical to `save_file` for the same tensors and metadata (a unit test compares the two):
tensors are stored in decreasing dtype order (F64 before F32 before BF16 before F16 ...), then by
name; the header is compact JSON (non-ASCII kept as UTF-8) padded with spaces to a multiple of
8 bytes, preceded by its length as a little-endian u64.

Contract: every byte of every tensor must be written exactly once before `close()`, which
raises if any tensor is incomplete (a hole in the file would otherwise read as zeros).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

# safetensors' Rust Dtype enum order (save_file sorts by it, descending, then by name).
_DTYPE_ORDER = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
                "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64", "U64"]
_TORCH = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
          torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
          torch.uint8: "U8", torch.bool: "BOOL"}
_ITEMSIZE = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
             "U8": 1, "BOOL": 1}


def dtype_name(dtype: torch.dtype) -> str:
    """torch dtype -> safetensors dtype string ('F32', ...)."""
    return _TORCH[dtype]


class SafetensorsWriter:
    """`plan` maps tensor name -> (safetensors dtype string, shape). Use as a context manager;
    `write(name, data, row=0)` stores `data` (C-order, the tensor's dtype) starting at row
    `row` of the tensor's first axis."""

    def __init__(self, path: str | Path, plan: dict[str, tuple[str, tuple[int, ...]]],
                 metadata: dict[str, str] | None = None):
        order = sorted(plan, key=lambda n: (-_DTYPE_ORDER.index(plan[n][0]), n))
        header: dict = {"__metadata__": dict(sorted(metadata.items()))} if metadata else {}
        self._where: dict[str, tuple[int, int, int]] = {}   # name -> (start, bytes, bytes per row)
        offset = 0
        for name in order:
            dtype, shape = plan[name]
            n_bytes = int(np.prod(shape, dtype=np.int64)) * _ITEMSIZE[dtype]
            header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n_bytes]}
            row_bytes = n_bytes // shape[0] if shape and shape[0] else n_bytes
            self._where[name] = (offset, n_bytes, row_bytes)
            offset += n_bytes
        text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
        text += b" " * (-len(text) % 8)
        self._data_start = 8 + len(text)
        self._written = {name: 0 for name in plan}
        self.path = Path(path)
        self._f = self.path.open("wb")
        self._f.write(len(text).to_bytes(8, "little") + text)
        self._f.truncate(self._data_start + offset)

    def write(self, name: str, data, row: int = 0) -> None:
        """Store `data` (torch tensor or numpy array) at rows row.. of tensor `name`."""
        if isinstance(data, torch.Tensor):
            t = data.detach().contiguous().cpu()
            arr = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()
        else:
            arr = np.ascontiguousarray(data)
        start, n_bytes, row_bytes = self._where[name]
        begin = row * row_bytes
        if begin + arr.nbytes > n_bytes:
            raise ValueError(f"{name}: writing {arr.nbytes} bytes at row {row} overflows {n_bytes} bytes")
        self._f.seek(self._data_start + start + begin)
        self._f.write(arr.reshape(-1).view(np.uint8).data)
        self._written[name] += arr.nbytes

    def close(self) -> None:
        self._f.close()
        short = [n for n, w in self._written.items() if w != self._where[n][1]]
        if short:
            raise ValueError(f"{self.path.name}: tensors not written exactly once: {short[:5]}")

    def __enter__(self) -> "SafetensorsWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self._f.close()
