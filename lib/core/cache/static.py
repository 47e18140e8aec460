"""A fixed-size KV cache, the one a decode step captured as a CUDA graph needs (the gpt-fast
approach; the decoder that captures it: lib/decoding/graphed_greedy.py).

On a GPU, one decode step of a 270M model is ~270 small kernels: launching them from Python
costs far more than the math. A CUDA graph records the whole step once and replays it with
one launch. That needs every tensor to keep its shape and address, so this cache is
preallocated to `capacity` slots and written by position (slot = position):

    keys[l], values[l]: (B, n_kv_heads, capacity, head_dim)   positions[l]: (B, capacity)

Unwritten slots have position -1, which the engine never attends to, so attending over all
`capacity` slots gives exactly the same result as the growing KVCache (tested on the CPU).
"""
from __future__ import annotations

import torch

from lib.core.cache.protocol import PAD_POSITION


class StaticKVCache:
    def __init__(self, spec, batch: int, capacity: int, dtype=torch.float32, device="cpu"):
        shape = (batch, spec.n_kv_heads, capacity, spec.head_dim)
        self._k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(spec.n_layers)]
        self._v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(spec.n_layers)]
        self._pos = [torch.full((batch, capacity), PAD_POSITION, dtype=torch.long, device=device)
                     for _ in range(spec.n_layers)]
        self.n_layers, self.capacity = spec.n_layers, capacity
        self.next_position = 0  # only used when the caller gives no positions (prefill)

    def append(self, layer: int, k, v, pos):
        """Write k, v (B, H, T, d) into the slots named by pos (B, T); return all slots."""
        slots = pos[0]                                          # (T,) slot = position
        self._k[layer].index_copy_(2, slots, k)
        self._v[layer].index_copy_(2, slots, v)
        self._pos[layer].index_copy_(1, slots, pos)
        return self._k[layer], self._v[layer], self._pos[layer]

    def advance(self, positions) -> None:
        """No host sync (CUDA-graph safe): the caller owns the position counter."""

    def nbytes(self) -> int:
        return sum(t.nbytes for t in self._k + self._v)
