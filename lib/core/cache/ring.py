"""A KV cache that stores only what sliding-window layers can still see: a ring buffer.

Gemma 3's local layers attend to the last `window` (512) positions only; their older K/V
can never be read again. A full cache keeps them anyway; this cache gives every local layer
a fixed ring of `window + chunk - 1` slots (enough for a chunk of `chunk` new queries to see
their whole windows, as llama.cpp sizes its SWA cache: n_swa + n_ubatch) and every global
layer room for the whole context. New entries overwrite the oldest slots; slots never
written hold position -1, which the engine never attends to. It implements
lib.core.cache.protocol.KVCacheProtocol (append / advance / nbytes / next_position), so the
engine runs on it unchanged.

    capacity(l) = min(max_tokens, window_l + chunk - 1)   local layer
                = max_tokens                               global layer
"""
from __future__ import annotations

import torch

from lib.core.cache.dense import PAD_POSITION


def ring_capacities(windows, max_tokens: int, chunk: int = 1) -> list[int]:
    """Slots per layer for a context of `max_tokens` appended `chunk` tokens at a time."""
    return [max_tokens if w is None else min(max_tokens, w + chunk - 1) for w in windows]


class RingKVCache:
    def __init__(self, spec, batch: int, max_tokens: int, chunk: int = 1,
                 dtype=torch.float32, device="cpu"):
        self.n_layers, self.batch, self.chunk = spec.n_layers, batch, chunk
        self.capacity = ring_capacities(spec.windows, max_tokens, chunk)   # module global: tests may patch it
        self.is_ring = [w is not None and c < max_tokens for w, c in zip(spec.windows, self.capacity)]
        shape = lambda c: (batch, spec.n_kv_heads, c, spec.head_dim)  # noqa: E731
        self._k = [torch.zeros(shape(c), dtype=dtype, device=device) for c in self.capacity]
        self._v = [torch.zeros(shape(c), dtype=dtype, device=device) for c in self.capacity]
        self._pos = [torch.full((batch, c), PAD_POSITION, dtype=torch.long, device=device) for c in self.capacity]
        self._written = [0] * self.n_layers   # tokens ever appended per layer
        self.next_position = 0

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor):
        """Write T entries k, v (B, Hkv, T, d) into the ring; return all slots (unordered:
        attention masks by position, so slot order does not matter)."""
        T, cap = k.shape[2], self.capacity[layer]
        wraps = self._written[layer] + T > cap
        if wraps and not self.is_ring[layer]:
            raise ValueError(f"the cache was built for {cap} tokens; {self._written[layer] + T} do not fit")
        if wraps and T > self.chunk:
            raise ValueError(f"appending {T} tokens at once needs chunk >= {T} (cache built with chunk={self.chunk})")
        slots = (self._written[layer] + torch.arange(T, device=k.device)) % cap   # (T,)
        self._k[layer][:, :, slots] = k
        self._v[layer][:, :, slots] = v
        self._pos[layer][:, slots] = pos
        self._written[layer] += T
        return self._k[layer], self._v[layer], self._pos[layer]

    def advance(self, positions: torch.Tensor) -> None:
        """Called by the engine after each forward: new tokens continue after the last one."""
        self.next_position = int(positions.max()) + 1

    def length(self, layer: int = 0) -> int:
        return min(self._written[layer], self.capacity[layer])

    def nbytes(self) -> int:
        """Bytes of the K/V storage (all slots: a ring is allocated up front)."""
        return sum(k.nbytes + v.nbytes for k, v in zip(self._k, self._v))
