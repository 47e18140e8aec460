"""Several requests' own KV caches seen by the engine as one batch: what continuous batching
(lib/decoding/batching.py) hands the engine for one step of many sessions.

Each session keeps its own cache; the engine sees (B, H, S, d) keys and values padded to the
longest row with zeros at position -1, which it never attends to, and each row's new entries
end up in that row's own cache (padding is never stored).
"""
from __future__ import annotations

import torch

from lib.core.cache.dense import KVCache
from lib.core.cache.protocol import PAD_POSITION, KVCacheProtocol

GATHER_MAX_BYTES = 128 << 20   # a step gathers its rows' whole caches at once up to this size (K and V)


class BatchOfCaches:
    """Several requests' own caches seen by the engine as one batch (KVCacheProtocol).
    Row i has n_tokens[i] real tokens first, then padding (position -1), which is not stored.

    Two ways to build a layer's padded batch, with the same result:
    - gathered (every row a dense KVCache of batch 1, every layer the same length, the whole
      batch under GATHER_MAX_BYTES): at layer 0 each row's entries of ALL layers are copied
      once into one padded (L, B, H, S, d) batch; each layer then writes the step's new
      entries of all rows in one indexed copy, and after the last layer each row gets its new
      entries back, all layers in one copy. A few hundred copies per step instead of ~6,500
      (sixty decoding rows: one per row and layer, three times over); the model's part of
      that step took 207 ms instead of 231 (medians, side by side, this 2-core CPU).
    - per layer (any other cache): each row's cache appends and returns its entries, which
      are copied into the layer's padded batch."""

    def __init__(self, caches: list[KVCacheProtocol], n_tokens: list[int]):
        self.caches, self.n_tokens = caches, n_tokens
        self.n_layers = caches[0].n_layers
        self.next_position = 0           # unused: the scheduler always passes positions
        self._gathered = None            # this step's batch: (keys, values, positions, new entries, old lengths)
        self._layers_done = 0

    def append(self, layer, k, v, pos):
        """k, v (B, H, T, d), pos (B, T) -> every row's (keys, values, positions), padded to
        the longest row with zeros and position -1: (B, H, S, d), (B, H, S, d), (B, S)."""
        if layer == 0:
            self._gathered = self._gather(k, pos)
        if self._gathered is None:
            return self._append_per_layer(layer, k, v, pos)
        keys, values, positions, (rows, cols, new), _ = self._gathered
        keys[layer][rows, :, cols] = k[rows, :, new]                    # (N, H, d): the step's new entries
        values[layer][rows, :, cols] = v[rows, :, new]
        self._layers_done += 1
        if self._layers_done == self.n_layers:
            self._hand_back()
        return keys[layer], values[layer], positions[layer]

    def _gather(self, k, pos):
        """Every row's cache, all layers, in one padded batch with room for the new entries
        (positions written already), or None where the per-layer way must be used."""
        if not all(isinstance(c, KVCache) and c.batch == 1 and c.uniform_length() is not None for c in self.caches):
            return None
        old = [c.length() for c in self.caches]
        S = max(o + n for o, n in zip(old, self.n_tokens))
        B, H, _, d = k.shape
        if 2 * self.n_layers * B * H * S * d * k.element_size() > GATHER_MAX_BYTES:
            return None
        keys = k.new_zeros(self.n_layers, B, H, S, d)                   # (L, B, H, S, d)
        values = k.new_zeros(self.n_layers, B, H, S, d)
        positions = pos.new_full((self.n_layers, B, S), PAD_POSITION)   # (L, B, S)
        for i, (c, o) in enumerate(zip(self.caches, old)):
            if o:
                ck, cv, cp = c.all_layers()                              # (L, 1, H, o, d), (L, 1, o)
                keys[:, i, :, :o], values[:, i, :, :o], positions[:, i, :o] = ck[:, 0], cv[:, 0], cp[:, 0]
        # the step's N new entries: row rows[j], its token new[j], stored at column cols[j]
        rows = torch.tensor([i for i, n in enumerate(self.n_tokens) for _ in range(n)])     # (N,)
        new = torch.tensor([j for n in self.n_tokens for j in range(n)])                     # (N,)
        cols = torch.tensor([old[i] for i in rows.tolist()]) + new                           # (N,)
        positions[:, rows, cols] = pos[rows, new]
        self._layers_done = 0
        return keys, values, positions, (rows, cols, new), old

    def _hand_back(self) -> None:
        """Each row's new entries, all layers, into its own cache (after the last layer)."""
        keys, values, positions, _, old = self._gathered
        for i, (c, o, n) in enumerate(zip(self.caches, old, self.n_tokens)):
            c.append_all_layers(keys[:, i:i + 1, :, o:o + n], values[:, i:i + 1, :, o:o + n],
                                positions[:, i:i + 1, o:o + n])
        self._gathered = None

    def _append_per_layer(self, layer, k, v, pos):
        rows = [c.append(layer, k[i:i + 1, :, :n], v[i:i + 1, :, :n], pos[i:i + 1, :n])
                for i, (c, n) in enumerate(zip(self.caches, self.n_tokens))]
        S = max(r[0].shape[2] for r in rows)
        B, H, _, d = k.shape
        keys = k.new_zeros(B, H, S, d)
        values = v.new_zeros(B, H, S, d)
        positions = pos.new_full((B, S), PAD_POSITION)
        for i, (rk, rv, rp) in enumerate(rows):
            keys[i, :, :rk.shape[2]] = rk[0]
            values[i, :, :rv.shape[2]] = rv[0]
            positions[i, :rp.shape[1]] = rp[0]
        return keys, values, positions

    def advance(self, positions) -> None:
        for i, (c, n) in enumerate(zip(self.caches, self.n_tokens)):
            c.advance(positions[i:i + 1, :n])

    def nbytes(self) -> int:
        return sum(c.nbytes() for c in self.caches)
