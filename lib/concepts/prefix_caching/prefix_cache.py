"""Prefix caching: reuse the K/V of an identical *token* prefix, block by block.

A cached block is found by its chained hash (lib.core.cache.block_manager.chain_hash): block i's key
is H(key of block i-1, token ids of block i), so it names the entire prefix up to that block.
Consequences the page shows:
  - a hit needs the same token ids in every earlier block, not similar text;
  - one early edit changes a block's hash and therefore every later hash: all later blocks
    miss, even where the text after the edit is identical;
  - the K/V are also tied to positions (RoPE rotates keys by their absolute position), so
    reusing them for tokens that sit at other positions gives different (wrong) logits.
Reuse itself changes nothing: logits after reuse equal a full recompute.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.core.cache.block_manager import BlockManager, block_hashes
from lib.core.cache.paged_attention import BlockPool, paged_forward
from lib.core.timing import measure


def common_prefix_len(a, b) -> int:
    """Length of the longest common prefix of two token id sequences."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@dataclass
class BlockRow:
    index: int          # logical block number in the new prompt
    start: int          # first token index of the block
    n_tokens: int       # tokens in the block (< block size only for the last, partial one)
    hash_new: str       # chained hash ("" for a partial block: never cached)
    hash_cached: str    # the cached prompt's hash at the same index ("" if none)
    hit: bool


def match_blocks(cached_ids, new_ids, block_size: int = 16) -> list[BlockRow]:
    """Hit/miss of every block of `new_ids` against the blocks the cached prompt left behind.
    Only full blocks have hashes; the block holding the last token is always recomputed
    (the model must produce logits for it), exactly like BlockManager.allocate."""
    hc, hn = block_hashes(list(cached_ids), block_size), block_hashes(list(new_ids), block_size)
    known = set(hc)
    rows, missed = [], False
    n = len(new_ids)
    for i in range(-(-n // block_size)):
        start = i * block_size
        full = i < len(hn)
        h = hn[i] if full else ""
        hit = full and not missed and h in known and start + block_size < n
        missed = missed or not hit
        rows.append(BlockRow(i, start, min(block_size, n - start), h, hc[i] if i < len(hc) else "", hit))
    return rows


@dataclass
class ReuseResult:
    n_tokens: int              # new prompt length
    n_reused: int              # tokens whose K/V came from the cache
    max_abs_diff: float        # max |logits after reuse - logits of a full recompute|
    argmax_equal: bool
    t_full_s: float            # median prefill time of the whole new prompt (contiguous cache)
    t_reuse_s: float           # median time to compute only the uncached suffix (paged pool)
    hit_blocks: list[int]      # physical blocks shared between the two prompts
    spread_full_s: float = 0.0   # slowest − fastest repeat of each
    spread_reuse_s: float = 0.0
    repeats: int = 0
    load_avg: float = 0.0        # the machine's 1-minute load average when measured


def reuse_vs_recompute(engine, cached_ids, new_ids, block_size: int = 16, repeats: int = 3) -> ReuseResult:
    """Run `cached_ids` into a paged pool and free it (its full blocks stay hashed); then
    allocate `new_ids`, which hits the shared full blocks, and compute only the rest.
    Compare the last-token logits with a full recompute and time both with
    lib.core.timing.measure (alone on the server, `repeats` times after a warm-up, median)."""
    cached_ids, new_ids = [int(t) for t in cached_ids], [int(t) for t in new_ids]
    need = -(-len(cached_ids) // block_size) + 2 * -(-len(new_ids) // block_size) + 2
    manager = BlockManager(need, block_size)
    pool = BlockPool(engine.spec, need, block_size, engine.dtype, engine.device)
    manager.allocate("cached", cached_ids)
    paged_forward(engine, pool, manager, ["cached"], [cached_ids], logits="none")
    manager.free("cached")

    def with_reuse():
        n = manager.allocate("new", new_ids)
        out = paged_forward(engine, pool, manager, ["new"], [new_ids[n:]])[0, -1]    # (V,)
        hits = manager.tables["new"][:n // block_size]
        manager.uncache(manager.tables["new"][n // block_size:])   # the next repeat must not hit B itself
        manager.free("new")
        return out, n, hits

    ids = torch.tensor([new_ids], device=engine.device)
    full = lambda: engine.forward(ids, engine.new_cache(capacity=len(new_ids)))[0, -1]  # noqa: E731
    ref = full()                                                                          # (V,)
    reused, n, hits = with_reuse()
    tf, tr = measure(full, repeats), measure(with_reuse, repeats)
    return ReuseResult(len(new_ids), n, float((reused - ref).abs().max()), int(reused.argmax()) == int(ref.argmax()),
                       tf.median_s, tr.median_s, hits, tf.spread_s, tr.spread_s, repeats, tr.load_avg)


@dataclass
class ShiftResult:
    shift: int
    n_reuse: int               # tokens whose K/V came from the cache
    max_abs_diff: float        # reuse at shifted positions vs a recompute at those positions
    argmax_equal: bool
    top_reuse: int             # the token each would predict next
    top_recompute: int
    top: tuple = ()            # (token id, p after the recompute, p after the reuse), the recompute's
    #                            TOP_SHOWN likeliest tokens, then the reuse's top token if not among them


TOP_SHOWN = 6


def prefix_kv(engine, ids, n_reuse: int):
    """What a text-keyed cache holds for ids[:n_reuse]: their K/V computed at positions
    0 … n_reuse-1 (a KVCache; one per prompt, shared by every shift, which only clones it)."""
    cache = engine.new_cache(capacity=len(ids))
    engine.forward(torch.tensor([[int(t) for t in ids[:n_reuse]]], device=engine.device), cache, logits="none")
    return cache


def reuse_at_shifted_positions(engine, ids, n_reuse: int, shift: int, _prefix=None) -> ShiftResult:
    """The request holds `ids` at positions shift, shift+1, …; a text-keyed cache hands it
    the K/V of ids[:n_reuse] computed at positions 0 … n_reuse-1 (`_prefix`: prefix_kv's
    cache, computed here when not given). Continue the rest at the request's true positions
    and compare with a recompute at those positions. (shift = 0 is ordinary, correct reuse.)"""
    ids = [int(t) for t in ids]
    n = len(ids)
    dev = engine.device
    cache = (prefix_kv(engine, ids, n_reuse) if _prefix is None else _prefix).clone()      # positions 0..n_reuse-1
    rest_pos = torch.arange(n_reuse + shift, n + shift, device=dev)[None]                   # (1, n - n_reuse)
    reused = engine.forward(torch.tensor([ids[n_reuse:]], device=dev), cache, positions=rest_pos)[0, -1]
    all_pos = torch.arange(shift, n + shift, device=dev)[None]                               # (1, n)
    ref = engine.forward(torch.tensor([ids], device=dev), engine.new_cache(capacity=n), positions=all_pos)[0, -1]
    p_ref, p_reused = torch.softmax(ref.double(), -1), torch.softmax(reused.double(), -1)            # (V,) each
    shown = p_ref.topk(TOP_SHOWN).indices.tolist()
    shown += [int(reused.argmax())] if int(reused.argmax()) not in shown else []
    return ShiftResult(shift, n_reuse, float((reused - ref).abs().max()), int(reused.argmax()) == int(ref.argmax()),
                       int(reused.argmax()), int(ref.argmax()),
                       tuple((i, float(p_ref[i]), float(p_reused[i])) for i in shown))


def token_diff(a, b) -> list[tuple[str, int, int | None, int | None]]:
    """Aligned comparison up to the longer length: (status, index, id in a, id in b) with
    status "same" before the first difference and "after" from it on (even where ids agree
    again: the prefix is already broken there)."""
    p = common_prefix_len(a, b)
    out = []
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        out.append(("same" if i < p else "after", i, x, y))
    return out


def one_char_edit(text: str, at: int = 4) -> str:
    """`text` with the first letter at or after index `at` changed in case (a one-character
    edit near the start, e.g. "You are" -> "You Are"); unchanged if it has no letter there."""
    for i in range(min(at, len(text)), len(text)):
        ch = text[i]
        if ch.isalpha() and ch.swapcase() != ch:
            return text[:i] + ch.swapcase() + text[i + 1:]
    return text
