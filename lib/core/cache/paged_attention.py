"""Paged attention on the engine: K/V live in a pool of physical blocks, read via block tables.

The cache itself (`BlockPool`, `PagedBatch`, `slot_index`) lives in lib/core/cache/paged.py,
where the engine's caches live; this module runs the engine through it with the allocator of
lib.core.cache.block_manager and compares with the contiguous cache.

    pool.k[l], pool.v[l]: (num_blocks, block_size, n_kv_heads, head_dim)   one tensor per layer
    flat slot of token t of a sequence = table[t // B] * B + t % B
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.core.cache.block_manager import BlockManager
from lib.core.cache.paged import BlockPool, PagedBatch, slot_index

__all__ = ["BlockPool", "PagedBatch", "slot_index", "paged_forward", "PagedCheck", "paged_vs_contiguous"]


def paged_forward(engine, pool: BlockPool, manager: BlockManager, seqs: list[str],
                  new_tokens: list[list[int]], logits="last") -> torch.Tensor:
    """Run each row's new tokens through the engine with K/V stored in the paged pool.
    Returns the engine's logits (B, T', V) (or hidden states for logits="none")."""
    batch = PagedBatch(pool, manager, seqs, new_tokens)
    ids = torch.tensor(new_tokens, device=engine.device)                    # (B, T)
    return engine.forward(ids, batch, positions=batch.positions, logits=logits)


@dataclass
class PagedCheck:
    max_abs_diff: float       # max |paged logits - contiguous logits| over every position
    argmax_equal: bool
    n_tokens: int
    blocks: list[int]         # the physical blocks the sequence ended up in


def paged_vs_contiguous(engine, ids, block_size: int = 16, num_blocks: int = 64,
                        scramble_seed: int = 0) -> PagedCheck:
    """Prefill `ids` through a paged pool whose free list is shuffled (so the blocks are not
    contiguous, not in order) and through the engine's contiguous KVCache; compare logits
    at every position."""
    spec = engine.spec
    ids = [int(t) for t in ids]
    manager = BlockManager(num_blocks, block_size)
    order = torch.randperm(num_blocks, generator=torch.Generator().manual_seed(scramble_seed)).tolist()
    manager.free_ids.clear()
    manager.free_ids.extend(order)
    pool = BlockPool(spec, num_blocks, block_size, engine.dtype, engine.device)
    manager.allocate("s", ids)
    paged = paged_forward(engine, pool, manager, ["s"], [ids], logits="all")[0]            # (T, V)
    ref = engine.forward(torch.tensor([ids], device=engine.device),
                         engine.new_cache(capacity=len(ids)), logits="all")[0]             # (T, V)
    return PagedCheck(float((paged - ref).abs().max()), bool((paged.argmax(-1) == ref.argmax(-1)).all()),
                      len(ids), list(manager.tables["s"]))
