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

`Q8VocabMatrix` keeps the same matrix the way the bundled GGUF stores it (Q8_0: int8 values,
one scale per 32 of them): 179 MB instead of 671 MB, the same float32 values bit for bit.
"""
from __future__ import annotations

import math

import torch

from lib.core.cancellation import checkpoint

from lib.core.matmul import onednn_suits, rows_times
from lib.core.one_call import compiled
from lib.core.q8_rows import expand_rows, expanded_argmax, expanded_product
from lib.core.online_softmax import running_argmax, running_comparison, running_nll

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
        rows = x.reshape(-1, self.hidden)                                  # (N, D)
        if onednn_suits(rows):
            y = rows.new_empty(rows.shape[0], self.vocab)                         # (N, V)
            for i, block in enumerate(self.blocks):          # block by block: one block's output at a time
                y[:, i * self.block_width:(i + 1) * self.block_width] = rows_times(rows, block)
        else:
            y = torch.matmul(rows[None], self.blocks).permute(1, 0, 2)     # (N, nb, V / nb)
        return y.reshape(*lead, self.vocab)

    def argmax(self, x: torch.Tensor, transform=None) -> torch.Tensor:
        """argmax over the vocabulary of transform(x @ E^T): x (..., D) -> ids (...), one
        column block at a time (never the (..., V) logits)."""
        rows = x.reshape(-1, self.hidden)                                  # (N, D)
        return running_argmax(self._chunks(rows), rows.shape[0], transform).reshape(x.shape[:-1])

    def nll(self, x: torch.Tensor, targets: torch.Tensor, transform=None) -> torch.Tensor:
        """-ln softmax(transform(x @ E^T))[target]: x (N, D), targets (N,) -> (N,), one column
        block at a time (running_nll; never the (N, V) logits)."""
        return running_nll(self._chunks(x.reshape(-1, self.hidden)), targets.reshape(-1), transform)

    def compare(self, x: torch.Tensor, n: int, targets: torch.Tensor, transform=None):
        """running_comparison of x ((K + 1) n, D): a reference run's n final hidden states,
        then K other runs', one column block at a time."""
        return running_comparison(self._chunks(x.reshape(-1, self.hidden)), n, targets.reshape(-1), transform)

    def _chunks(self, rows: torch.Tensor):
        """Yield (first token id, rows @ block (N, V / nb)) for each column block."""
        for i, block in enumerate(self.blocks):
            yield i * self.block_width, rows_times(rows, block)

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

    def storage(self) -> list[torch.Tensor]:
        """The tensors that hold the matrix (for memory accounting)."""
        return [self.blocks]

    def to(self, device, dtype) -> "VocabMatrix":
        """The same matrix on another device / dtype (no copy when nothing changes)."""
        return VocabMatrix(self.blocks.to(device=device, dtype=dtype))


class Q8VocabMatrix:
    """E (V, D) as GGUF's Q8_0 stores it: int8 values `q` (V, D) and one scale per 32
    consecutive values of a row, `scales` (V, D / 32): E[t, j] = scales[t, j // 32] * q[t, j].

    Exact: a Q8_0 scale is a float16 (11 significant bits) and q has 8, so their float32
    product is exact, and every value read here is bit for bit the float32 matrix that
    dequantizing the GGUF gives (and that transformers loads). It takes V D + 4 V D / 32 bytes
    (179 MB for Gemma 3 270M) instead of 4 V D (671 MB): on a small host that is most of the
    model's memory, since the LM head reads the whole matrix for every token.

    The price is arithmetic: the LM head expands `CHUNK` rows at a time to float32 (a buffer
    that stays in the CPU caches) and multiplies that slice. For one decoding token that is ~2x
    the blocked float32 head's time on this 2-core CPU (~36-40 ms against ~20 ms, medians);
    for a batch of 30 rows the two take the same (~125 ms), since there the products dominate.
    Same interface as VocabMatrix: `dtype` is the compute dtype (float32).

    How many rows to expand at once depends on what follows. A few decoding rows read each
    expanded slice once, so it must still be in the core's own cache when they do: 1,024 rows
    (2.6 MB, the two cores' 2 MB L2s) made one sequence's greedy decoding 9.9 -> 12.9 tok/s on
    this 2-core Intel host against 2,048 rows (5 MB; identical tokens, medians of 5 alternating
    runs). Many rows (a streaming evaluation's 512) are a compute-bound product, where larger
    slices win (512 rows' NLL 0.93 s at 1,024, 0.86 s at 2,048)."""

    GROUP = 32
    CHUNK = 1024                       # rows expanded at once for up to FEW_ROWS rows: 2.6 MB
    CHUNK_MANY = 2048                  # ... and for more: 5 MB
    FEW_ROWS = 32

    def __init__(self, q: torch.Tensor, scales: torch.Tensor):
        V, D = q.shape
        if q.dtype != torch.int8 or scales.shape != (V, D // self.GROUP) or D % self.GROUP:
            raise ValueError(f"Q8_0 needs int8 q (V, D) with D a multiple of {self.GROUP} and scales (V, D/{self.GROUP}); "
                             f"got {tuple(q.shape)} {q.dtype} and {tuple(scales.shape)}")
        self.q, self.scales = q, scales.float()                  # (V, D) int8, (V, D / 32) float32
        self.vocab, self.hidden = V, D

    @classmethod
    def from_gguf_blocks(cls, raw) -> "Q8VocabMatrix":
        """From Q8_0 bytes, shape (V, D / 32, 34): per block a float16 scale, then 32 int8."""
        import numpy as np

        raw = np.asarray(raw, dtype=np.uint8)
        V, nblk, _ = raw.shape
        d = torch.from_numpy(np.ascontiguousarray(raw[:, :, :2]).view(np.float16)[..., 0].astype(np.float32))
        q = torch.from_numpy(np.ascontiguousarray(raw[:, :, 2:]).view(np.int8).reshape(V, nblk * cls.GROUP))
        return cls(q, d)

    def rows(self, start: int, stop: int, out: torch.Tensor | None = None) -> torch.Tensor:
        """E[start:stop] as float32 (stop - start, D), into `out` if given."""
        stop = min(stop, self.vocab)
        out = torch.empty(stop - start, self.hidden, dtype=torch.float32) if out is None else out
        return expand_rows(self.q, self.scales, start, stop, out, self.GROUP)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Token ids (B, T) -> their rows of E (B, T, D), float32."""
        flat = ids.reshape(-1)
        e = self.q[flat].float().view(-1, self.hidden // self.GROUP, self.GROUP) * self.scales[flat][:, :, None]
        return e.view(*ids.shape, self.hidden)

    def columns(self, ids: torch.Tensor) -> torch.Tensor:
        """E^T[:, ids] -> (D, len(ids)), contiguous (a smaller LM head over those tokens)."""
        return self.embed(ids[None])[0].t().contiguous()

    def dense(self) -> torch.Tensor:
        """E^T as one float32 (D, V) tensor (a copy: 4 V D bytes)."""
        return self.rows(0, self.vocab).t()

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """The LM head: x (..., D) -> x @ E^T (..., V), CHUNK rows of E expanded at a time. Up to
        FEW_ROWS rows (decoding, a prompt's last token) in one compiled call (lib/core/one_call.py:
        ~1,500 small operations that would each wait for the GIL in a busy server); more rows
        eagerly, with a cancellation checkpoint between chunks."""
        lead = x.shape[:-1]
        rows = x.reshape(-1, self.hidden).float()                             # (N, D)
        one_call = compiled(expanded_product) if rows.shape[0] <= self.FEW_ROWS else None
        if one_call is not None:
            y = one_call(rows, self.q, self.scales, self.CHUNK, self.GROUP)
        else:
            y = rows.new_empty(rows.shape[0], self.vocab)                     # (N, V)
            for s, chunk in self._chunks(rows):
                y[:, s:s + chunk.shape[1]] = chunk
        return y.reshape(*lead, self.vocab)

    def argmax(self, x: torch.Tensor, transform=None) -> torch.Tensor:
        """argmax over the vocabulary of transform(x @ E^T): x (..., D) -> ids (...), each
        CHUNK of E expanded once for all rows (never the (..., V) logits); up to FEW_ROWS rows
        with no transform in one compiled call (as `logits`)."""
        rows = x.reshape(-1, self.hidden).float()                             # (N, D)
        one_call = compiled(expanded_argmax) if rows.shape[0] <= self.FEW_ROWS and transform is None else None
        if one_call is not None:
            return one_call(rows, self.q, self.scales, self.CHUNK, self.GROUP).reshape(x.shape[:-1])
        return running_argmax(self._chunks(rows), rows.shape[0], transform).reshape(x.shape[:-1])

    def nll(self, x: torch.Tensor, targets: torch.Tensor, transform=None) -> torch.Tensor:
        """-ln softmax(transform(x @ E^T))[target]: x (N, D), targets (N,) -> (N,), each CHUNK
        of E expanded once for all rows (running_nll): a 128-token chunk of a streaming
        evaluation pays one expansion of the matrix instead of four at 32 rows a call."""
        return running_nll(self._chunks(x.reshape(-1, self.hidden).float()), targets.reshape(-1), transform)

    def compare(self, x: torch.Tensor, n: int, targets: torch.Tensor, transform=None):
        """running_comparison of x ((K + 1) n, D): a reference run's n final hidden states,
        then K other runs', each CHUNK of E expanded once for all of them."""
        return running_comparison(self._chunks(x.reshape(-1, self.hidden).float()), n, targets.reshape(-1), transform)

    def _chunks(self, rows: torch.Tensor):
        """Yield (s, rows @ E[s:s+c]^T (N, c)) for s = 0, c, 2c, ... (c: CHUNK or CHUNK_MANY rows)."""
        c = self.CHUNK if rows.shape[0] <= self.FEW_ROWS else self.CHUNK_MANY
        buf = torch.empty(c, self.hidden)                                     # (c, D), reused
        for s in range(0, self.vocab, c):
            if c == self.CHUNK_MANY:
                checkpoint()          # many rows: a long pass, which may stop or step aside between chunks
            w = self.rows(s, s + c, buf)                                      # (c, D) = E[s:s+c]
            yield s, rows_times(rows, w.t())

    @property
    def device(self) -> torch.device:
        return self.q.device

    @property
    def dtype(self) -> torch.dtype:
        return torch.float32

    def numel(self) -> int:
        return self.q.numel()

    def storage(self) -> list[torch.Tensor]:
        return [self.q, self.scales]

    def to(self, device, dtype) -> "Q8VocabMatrix | VocabMatrix":
        """float32 on the CPU: itself. Anything else: `expanded` in that dtype."""
        if torch.device(device).type == "cpu" and dtype == torch.float32:
            return self
        return self.expanded(device, dtype)

    def expanded(self, device="cpu", dtype=torch.float32) -> VocabMatrix:
        """The same matrix as a dense, blocked VocabMatrix (4 V D bytes in float32: faster for
        one decoding token, four times the memory), built one column block at a time (block b
        is E[b W:(b + 1) W]^T, W = V / nb: never a whole float32 copy on the way)."""
        nb = math.gcd(self.vocab, MAX_BLOCKS)
        width = self.vocab // nb
        blocks = torch.empty(nb, self.hidden, width, dtype=dtype, device=device)   # (nb, D, V / nb)
        for b in range(nb):
            blocks[b] = self.rows(b * width, (b + 1) * width).t().to(device=device, dtype=dtype)
        return VocabMatrix(blocks)
