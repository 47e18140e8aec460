"""The vocabulary (token embedding = tied LM head) read independently: `gguf`'s own
dequantization of the GGUF's raw `token_embd.weight` (lib/reference/gguf_weights.py), never
the app's Q8_0 reader (lib/core/vocab_matrix.Q8VocabMatrix).

`embedding_rows(gguf, ids)` -> float32 (n, D): the rows of those tokens.
`top_logits(gguf, h, k)` -> (ids (k,), logits (k,)): the k largest of h @ E^T over the WHOLE
vocabulary, E dequantized by `gguf` CHUNK rows at a time (never the 671 MB float32 matrix),
in float64 so its rounding differs from the engine's float32 sums only by those.
"""
from __future__ import annotations

import numpy as np

EMBED = "token_embd.weight"
CHUNK = 16384                  # rows dequantized at once: 16,384 x 640 x 4 B = 42 MB


def embedding_rows(gguf, ids) -> np.ndarray:
    return gguf.rows(EMBED, ids)


def top_logits(gguf, h: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """h (D,) final normed hidden state -> the top-k token ids and their logits (float64)."""
    import gguf as gguf_pkg

    info = gguf.file.tensors[EMBED]
    V = info.shape[0]
    raw = gguf.file.raw(EMBED).reshape(V, -1)                                # (V, row bytes)
    qtype = gguf_pkg.GGMLQuantizationType(info.ggml_type)
    h64 = np.asarray(h, dtype=np.float64)
    best_ids, best_val = np.empty(0, dtype=np.int64), np.empty(0)
    for s in range(0, V, CHUNK):
        w = gguf_pkg.quants.dequantize(np.ascontiguousarray(raw[s:s + CHUNK]), qtype)   # (c, D) float32
        y = w.astype(np.float64) @ h64                                                  # (c,)
        top = np.argpartition(-y, min(k, y.size - 1))[:k]
        best_ids = np.concatenate([best_ids, top + s])
        best_val = np.concatenate([best_val, y[top]])
        keep = np.argsort(-best_val, kind="stable")[:k]
        best_ids, best_val = best_ids[keep], best_val[keep]
    return best_ids, best_val
