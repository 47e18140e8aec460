"""The vocabulary matrix: token embedding and LM head (one tensor when they are tied).

Mathematically it is E^T with shape (D, V): the embedding of token t is column t, and the LM
head is `logits = x @ E^T`. It is stored in column blocks, shape (nb, D, V / nb), because of
how one decoding token computes x @ E^T on a CPU: the product adds D scaled rows of E^T into
a V-long output. For Gemma's 262,144 tokens that output is 1 MB, too big for the fast CPU
caches, so with one (D, V) block it travels to memory and back D = 640 times. With 32 blocks
each block's output is 32 KB and stays in the cache while its weights stream past: on this
2-core CPU the LM head takes ~8 ms less per token (about a tenth of a decoding step), and the
logits are bit-identical (each output is the same dot product, summed in the same order).
"""
from __future__ import annotations

import math

import torch

MAX_BLOCKS = 32


class VocabMatrix:
    """E^T (D, V) kept as `blocks` (nb, D, V / nb); column t lives in block t // (V / nb)."""

    def __init__(self, blocks: torch.Tensor):
        self.blocks = blocks                                   # (nb, D, V / nb)
        nb, self.hidden, self.block_width = blocks.shape
        self.vocab = nb * self.block_width

    @classmethod
    def from_dense(cls, e_t: torch.Tensor, max_blocks: int = MAX_BLOCKS) -> "VocabMatrix":
        """From E^T (D, V), which may be a transposed view of E (V, D): the blocks are made in
        one copy. The block count divides V exactly (gcd(V, max_blocks))."""
        D, V = e_t.shape
        nb = math.gcd(V, max_blocks)
        return cls(e_t.reshape(D, nb, V // nb).permute(1, 0, 2).contiguous())

    def dense(self) -> torch.Tensor:
        """E^T as one (D, V) tensor (a copy)."""
        return self.blocks.permute(1, 0, 2).reshape(self.hidden, self.vocab)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Token ids (B, T) -> their columns as rows (B, T, D)."""
        return self.blocks[ids // self.block_width, :, ids % self.block_width]

    def columns(self, ids: torch.Tensor) -> torch.Tensor:
        """E^T[:, ids] -> (D, len(ids)), contiguous (a smaller LM head over those tokens)."""
        return self.embed(ids[None])[0].t().contiguous()

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """The LM head: x (..., D) -> x @ E^T (..., V)."""
        lead = x.shape[:-1]
        y = torch.matmul(x.reshape(1, -1, self.hidden), self.blocks)   # (nb, N, V / nb)
        return y.permute(1, 0, 2).reshape(*lead, self.vocab)

    # tensor-like facts, for memory accounting
    @property
    def device(self) -> torch.device:
        return self.blocks.device

    @property
    def dtype(self) -> torch.dtype:
        return self.blocks.dtype

    def numel(self) -> int:
        return self.blocks.numel()

    def element_size(self) -> int:
        return self.blocks.element_size()

    def to(self, device, dtype) -> "VocabMatrix":
        """The same matrix on another device / dtype (no copy when nothing changes)."""
        return VocabMatrix(self.blocks.to(device=device, dtype=dtype))
