"""The paged KV cache: K/V live in a fixed pool of physical blocks, read through block tables.

    pool.k[l], pool.v[l]: (num_blocks, block_size, n_kv_heads, head_dim)   one tensor per layer
    flat slot of token t of a sequence = table[t // B] * B + t % B          (B = block_size)

`PagedBatch` implements KVCacheProtocol for one `Engine.forward`: for every layer the engine
hands it the new tokens' K/V; it writes them into their slots in the pool, then *gathers*
each sequence's K/V through its block table into the (B, Hkv, S, d) tensor the engine's
attention reads. Rows shorter than the longest are padded with position -1, which the
engine's mask never attends to. So the attention equation is untouched: only where the K/V
bytes live changes.

The bookkeeping (which block holds which tokens, reference counts, copy-on-write) belongs to
a block manager passed in (lib.core.cache.block_manager.BlockManager): anything
with `tables` (seq -> block ids), `lengths` (seq -> tokens stored) and
`append_slots(seq, token_ids) -> (slots, copies)` where each copy has `.src` and `.dst`.
"""
from __future__ import annotations

import torch

from lib.core.cache.protocol import PAD_POSITION


class BlockPool:
    """The physical K/V memory: a fixed number of blocks, allocated once, never grown."""

    def __init__(self, spec, num_blocks: int, block_size: int, dtype=torch.float32, device="cpu"):
        shape = (num_blocks, block_size, spec.n_kv_heads, spec.head_dim)
        self.block_size, self.num_blocks = block_size, num_blocks
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(spec.n_layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(spec.n_layers)]

    @property
    def bytes_per_block(self) -> int:
        """K and V of one block in every layer, measured from the allocated storage."""
        total = sum(t.untyped_storage().nbytes() for t in self.k + self.v)
        return total // self.num_blocks

    @property
    def bytes_per_token(self) -> int:
        return self.bytes_per_block // self.block_size

    def copy_block(self, src: int, dst: int) -> None:
        """Copy-on-write: duplicate one physical block in every layer."""
        for store in (self.k, self.v):
            for t in store:
                t[dst] = t[src]

    def flat(self, layer: int, which: str) -> torch.Tensor:
        """The layer's pool viewed as slots: (num_blocks * B, Hkv, d)."""
        t = (self.k if which == "k" else self.v)[layer]
        return t.view(-1, *t.shape[2:])


def slot_index(table: list[int], n_tokens: int, block_size: int) -> torch.Tensor:
    """Flat pool slots of tokens 0..n_tokens-1 of a sequence with this block table: (n,)."""
    t = torch.arange(n_tokens)
    return torch.as_tensor(table, dtype=torch.long)[t // block_size] * block_size + t % block_size


class PagedBatch:
    """One forward's worth of new tokens for several sequences, stored through block tables.

    Building it reserves the slots (allocating blocks, copy-on-write of shared blocks) once;
    `append` is then called by the engine for every layer. All rows add the same number T
    of new tokens (prefill one sequence, or decode one token for each of several)."""

    def __init__(self, pool: BlockPool, manager, seqs: list[str], new_tokens: list[list[int]]):
        if len({len(t) for t in new_tokens}) != 1:
            raise ValueError("every row must add the same number of tokens")
        self.pool, self.manager, self.seqs = pool, manager, list(seqs)
        self.n_layers = len(pool.k)
        starts = [manager.lengths[s] for s in seqs]
        self.copies = []
        for s, toks in zip(seqs, new_tokens):
            _, copies = manager.append_slots(s, toks)
            for op in copies:
                pool.copy_block(op.src, op.dst)
            self.copies += copies
        T, B = len(new_tokens[0]), len(seqs)
        self.positions = torch.stack([torch.arange(a, a + T) for a in starts])           # (B, T)
        lengths = [manager.lengths[s] for s in seqs]
        S = max(lengths)
        self.read_slots = torch.zeros(B, S, dtype=torch.long)                             # (B, S)
        self.key_positions = torch.full((B, S), PAD_POSITION, dtype=torch.long)           # (B, S)
        for b, (s, n) in enumerate(zip(seqs, lengths)):
            self.read_slots[b, :n] = slot_index(manager.tables[s], n, pool.block_size)
            self.key_positions[b, :n] = torch.arange(n)
        self.write_slots = torch.stack([self.read_slots[b, a:a + T] for b, a in enumerate(starts)])  # (B, T)
        self.next_position = int(self.positions.max()) + 1

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor):
        """Write k, v (B, Hkv, T, d) into their slots; return every row's K/V gathered
        through its block table: keys, values (B, Hkv, S, d) and positions (B, S)."""
        fk, fv = self.pool.flat(layer, "k"), self.pool.flat(layer, "v")      # (N*B, Hkv, d)
        w = self.write_slots.flatten()                                        # (B*T,)
        fk[w] = k.transpose(1, 2).reshape(-1, k.shape[1], k.shape[3])    # (B*T, Hkv, d)
        fv[w] = v.transpose(1, 2).reshape(-1, v.shape[1], v.shape[3])
        keys = fk[self.read_slots].permute(0, 2, 1, 3)                        # (B, Hkv, S, d)
        values = fv[self.read_slots].permute(0, 2, 1, 3)                      # (B, Hkv, S, d)
        return keys, values, self.key_positions

    def advance(self, positions: torch.Tensor) -> None:
        """The positions were fixed when the slots were reserved; nothing to move."""
        self.next_position = int(positions.max()) + 1

    def nbytes(self) -> int:
        """Bytes of the pool blocks this batch's sequences hold (a shared block counted once)."""
        blocks = {b for s in self.seqs for b in self.manager.tables[s]}
        return len(blocks) * self.pool.bytes_per_block
