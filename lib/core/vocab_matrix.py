"""The vocabulary matrix: token embedding and LM head (one tensor when they are tied).

Mathematically it is E^T with shape (D, V): the embedding of token t is column t, and the LM
head is `logits = x @ E^T`. It is stored in column blocks, shape (nb, D, V / nb), because of
how one decoding token computes x @ E^T on a CPU: the product adds D scaled rows of E^T into
a V-long output. For Gemma's 262,144 tokens that output is 1 MB, too big for the fast CPU
caches, so with one (D, V) block it travels to memory and back D = 640 times. With 32 blocks
each block's output is 32 KB and stays in the cache while its weights stream past: on this
2-core CPU the LM head takes ~8 ms less per token (about a tenth of a decoding step), and the
logits are bit-identical (each output is the same dot product, summed in the same order).

Several rows at once (a batched decoding step of many sessions, a speculative verify block, a
teacher-forced check) are a real matrix product, compute-bound rather than memory-bound. For
those the blocks go to oneDNN's product (PyTorch's own CPU kernel library, the one
torch.compile uses; the blocks are passed as transposed views, no copy): on this 2-core AMD
CPU it took 110-180 ms for 30 rows where the default BLAS took 280-310 ms (medians, side by
side). The two round differently (|diff| ~1e-4 on logits of size ~20, float32 sums of 640
products); one row keeps the path above.
"""
from __future__ import annotations

import math

import torch

MAX_BLOCKS = 32
MANY_ROWS = 2             # from this many rows, the LM head uses oneDNN's matrix product


def _onednn_linear():
    """oneDNN's float32 x @ W^T for W (out, in), if this PyTorch build has it (else None)."""
    op = getattr(torch.ops.mkldnn, "_linear_pointwise", None) if torch.backends.mkldnn.is_available() else None
    try:
        op(torch.ones(2, 3), torch.ones(3, 4).t(), None, "none", [], "")   # as used: a block's transposed view
        return lambda x, w: op(x, w, None, "none", [], "")
    except Exception:  # noqa: BLE001 - any failure: the default product is used
        return None


ONEDNN_LINEAR = _onednn_linear()


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
        rows = x.reshape(-1, self.hidden)                                  # (N, D)
        if (rows.shape[0] >= MANY_ROWS and ONEDNN_LINEAR is not None and rows.dtype == torch.float32
                and rows.device.type == "cpu"):
            y = rows.new_empty(rows.shape[0], self.vocab)                         # (N, V)
            for i, block in enumerate(self.blocks):          # block by block: one block's output at a time
                y[:, i * self.block_width:(i + 1) * self.block_width] = ONEDNN_LINEAR(rows, block.t())
        else:
            y = torch.matmul(rows[None], self.blocks).permute(1, 0, 2)     # (N, nb, V / nb)
        return y.reshape(*lead, self.vocab)

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
