"""What the engine asks of a KV cache. Every cache (dense, static, ring, quantized, paged,
evicting) implements this protocol; the engine knows nothing else about them.

Shapes: k, v (B, n_kv_heads, T, head_dim) for T new tokens; pos (B, T) int64 absolute
positions, -1 (PAD_POSITION) for padding, which the engine never attends to.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

PAD_POSITION = -1


@runtime_checkable
class KVCacheProtocol(Protocol):
    n_layers: int
    next_position: int   # the position the next appended token gets by default

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor,
               pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Store T new entries of one layer; return what attention reads for that layer:
        (keys (B, H, S, d), values (B, H, S, d), positions (B, S)) — the entries it keeps."""
        ...

    def advance(self, positions: torch.Tensor) -> None:
        """Called once after each forward with the positions just written (B, T)."""
        ...

    def nbytes(self) -> int:
        """Bytes of the storage the cache actually holds for its live entries."""
        ...
