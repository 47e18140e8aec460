"""The KV cache: an explicit object owned by the caller, never by the shared model.

Every layer keeps its own keys and values (already RoPE-rotated) and the absolute position
of every entry, so layers may hold different entries (sliding windows, sinks, eviction):

    keys[l], values[l]: (B, n_kv_heads, S_l, head_dim)     positions[l]: (B, S_l), int64

Position -1 marks padding: the engine never attends to it. Storage grows by doubling, so an
append is amortised O(1) and `crop` (speculative rollback) is free. All layers share one
tensor each for keys, values and positions, (n_layers, B, ...): a batched step of many
sessions (lib/decoding/batching.py) reads or extends a whole session's cache, every layer,
in one copy.
"""
from __future__ import annotations

import torch

from lib.core.cache.protocol import PAD_POSITION  # noqa: F401 (re-exported)


class KVCache:
    def __init__(self, n_layers: int, batch: int, n_kv_heads: int, head_dim: int,
                 dtype=torch.float32, device="cpu", capacity: int = 64):
        self.n_layers, self.batch = n_layers, batch
        self._k = torch.empty(n_layers, batch, n_kv_heads, capacity, head_dim, dtype=dtype, device=device)
        self._v = torch.empty_like(self._k)
        self._pos = torch.empty(n_layers, batch, capacity, dtype=torch.long, device=device)
        self._len = [0] * n_layers
        self.next_position = 0  # position the next appended token gets by default

    @classmethod
    def for_spec(cls, spec, batch: int = 1, dtype=torch.float32, device="cpu", capacity: int = 64):
        return cls(spec.n_layers, batch, spec.n_kv_heads, spec.head_dim, dtype, device, capacity)

    # ---- reading ---------------------------------------------------------------------------
    def length(self, layer: int = 0) -> int:
        return self._len[layer]

    def keys(self, layer: int) -> torch.Tensor:
        return self._k[layer, :, :, :self._len[layer]]

    def values(self, layer: int) -> torch.Tensor:
        return self._v[layer, :, :, :self._len[layer]]

    def positions(self, layer: int) -> torch.Tensor:
        return self._pos[layer, :, :self._len[layer]]

    def uniform_length(self) -> int | None:
        """The number of entries if every layer holds that many (always, unless a layer evicted)."""
        n = self._len[0]
        return n if self._len.count(n) == self.n_layers else None

    def all_layers(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every layer's entries at once, when all have the same length (uniform_length):
        keys, values (L, B, H, S, d), positions (L, B, S) — views, no copy."""
        n = self.uniform_length()
        if n is None:
            raise ValueError(f"the layers hold different numbers of entries: {self._len}")
        return self._k[:, :, :, :n], self._v[:, :, :, :n], self._pos[:, :, :n]

    def nbytes(self) -> int:
        """Bytes of the live entries (what the cache *holds*, not its spare capacity)."""
        return sum(self.keys(l).nbytes + self.values(l).nbytes for l in range(self.n_layers))

    # ---- writing ---------------------------------------------------------------------------
    def advance(self, positions: torch.Tensor) -> None:
        """Called by the engine after each forward: new tokens continue after the last one."""
        self.next_position = int(positions.max()) + 1

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor):
        """Add T entries k, v (B, H, T, d) at positions pos (B, T); return the layer's full
        (keys, values, positions) views."""
        n, T = self._len[layer], k.shape[2]
        if n + T > self._k.shape[3]:
            self._grow(max(2 * self._k.shape[3], n + T))
        self._k[layer, :, :, n:n + T] = k
        self._v[layer, :, :, n:n + T] = v
        self._pos[layer, :, n:n + T] = pos
        self._len[layer] = n + T
        return self.keys(layer), self.values(layer), self.positions(layer)

    def append_all_layers(self, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor) -> None:
        """Add T entries to every layer at once: k, v (L, B, H, T, d), pos (L, B, T). The same
        as append(l, k[l], v[l], pos[l]) for each layer l, in three copies. Needs a uniform
        length (a batched step hands a session its new entries this way)."""
        n, T = self.uniform_length(), k.shape[3]
        if n is None:
            raise ValueError(f"the layers hold different numbers of entries: {self._len}")
        if n + T > self._k.shape[3]:
            self._grow(max(2 * self._k.shape[3], n + T))
        self._k[:, :, :, n:n + T] = k
        self._v[:, :, :, n:n + T] = v
        self._pos[:, :, n:n + T] = pos
        self._len = [n + T] * self.n_layers

    def _grow(self, capacity: int) -> None:
        """Every layer's storage to `capacity` entries, the live ones copied."""
        n = max(self._len)
        k = self._k.new_empty(*self._k.shape[:3], capacity, self._k.shape[4])
        v = torch.empty_like(k)
        k[:, :, :, :n], v[:, :, :, :n] = self._k[:, :, :, :n], self._v[:, :, :, :n]
        pos = self._pos.new_empty(*self._pos.shape[:2], capacity)
        pos[:, :, :n] = self._pos[:, :, :n]
        self._k, self._v, self._pos = k, v, pos

    def crop(self, length: int) -> None:
        """Keep the first `length` entries of every layer (rollback after rejected drafts).
        Only valid while no layer has evicted entries (all layers then have equal length)."""
        for l in range(self.n_layers):
            self._len[l] = min(self._len[l], length)
        self.next_position = min(self.next_position, length)

    def keep(self, layer: int, index: torch.Tensor) -> None:
        """Keep only the entries at `index` (1-D, ascending) of one layer: eviction / gather."""
        n = len(index)
        for store in (self._k, self._v):
            store[layer, :, :, :n] = store[layer][:, :, index]
        self._pos[layer, :, :n] = self._pos[layer][:, index]
        self._len[layer] = n

    def evict_older_than(self, layer: int, min_position: int) -> None:
        """Drop entries whose position is below `min_position` (batch row 0 decides)."""
        index = torch.nonzero(self.positions(layer)[0] >= min_position).flatten()
        if len(index) < self._len[layer]:
            self.keep(layer, index)

    def reorder(self, batch_index: torch.Tensor) -> None:
        """Select/duplicate batch rows (beam search keeps the parents of the surviving beams)."""
        self._k = self._k[:, batch_index]  # advanced indexing copies
        self._v = self._v[:, batch_index]
        self._pos = self._pos[:, batch_index]
        self.batch = len(batch_index)

    def clone(self) -> "KVCache":
        other = KVCache.__new__(KVCache)
        other.n_layers, other.batch, other.next_position = self.n_layers, self.batch, self.next_position
        other._k, other._v, other._pos = self._k.clone(), self._v.clone(), self._pos.clone()
        other._len = list(self._len)
        return other
