"""Real eviction on the engine's KV cache, one token at a time (the reference implementation).

Before token t runs, every layer's cache is cut down to what the policy lets token t read
besides itself (`lib.core.cache.policy.kept`): sinks 0..S-1 and the W - 1 most recent entries.
The dropped entries are gone: no later step can attend to them, whatever the mask says.

With `reassign` the entries are then re-numbered 0..n-1 (their slot in the cache), and each
cached key is re-rotated by (new slot - old slot) with `lib.core.rope.rerotate`, which equals
recomputing it at the new position. The next token then runs at slot n.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from lib.core.cache.policy import CachePolicy, policy_window
from lib.core.cache.dense import KVCache
from lib.core.cancellation import Cancelled, checkpoint
from lib.core.rope import rerotate


def report(progress: Callable[[int, int], bool | None] | None, done: int, total: int) -> None:
    """Call progress(done, total); raise Cancelled when it returns False (or when nobody wants
    the result any more: lib.core.cancellation)."""
    checkpoint()
    if progress is not None and progress(done, total) is False:
        raise Cancelled(f"stopped after {done} of {total}")


@dataclass
class EvictingCache:
    """An engine KVCache plus the text position of every entry (same on all policy layers)."""
    cache: KVCache
    policy: CachePolicy
    origin: list[int] = field(default_factory=list)   # text position of each cached entry

    @property
    def next_text_position(self) -> int:
        return self.origin[-1] + 1 if self.origin else 0


def new_evicting_cache(engine, policy: CachePolicy, capacity: int = 64) -> EvictingCache:
    if policy.kind == "recompute":
        raise ValueError("recompute keeps no KV cache between steps: use streaming_eval.nll_recompute")
    if policy.reassign and any(s != 1.0 for s in engine.rope_scaling):
        raise ValueError("re-rotation assumes plain RoPE (no attention scaling)")
    return EvictingCache(engine.new_cache(1, capacity), policy)


def evict_for(ec: EvictingCache, engine, t: int) -> None:
    """Trim every policy layer to the entries that token t may read (besides itself)."""
    p, spec = ec.policy, engine.spec
    origin = torch.tensor(ec.origin, dtype=torch.long)
    for l in range(spec.n_layers):
        w = policy_window(p, spec, l)
        if w is None:
            continue
        if p.reassign:
            index = torch.nonzero((origin < p.sinks) | (origin > t - w)).flatten()
        else:  # the cache stores text positions: keep by position
            pos = ec.cache.positions(l)[0]
            index = torch.nonzero((pos < p.sinks) | (pos > t - w)).flatten()
        if len(index) < ec.cache.length(l):
            ec.cache.keep(l, index)
    if p.reassign:   # every layer is windowed: one origin list for all
        w = p.window
        ec.origin = [o for o in ec.origin if o < p.sinks or o > t - w]
        renumber(ec.cache, engine)


def renumber(cache: KVCache, engine) -> None:
    """Give the entries of every layer the positions 0..n-1, re-rotating their keys by the
    shift so that attention sees the same relative offsets as a fresh computation would."""
    for l in range(cache.n_layers):
        old = cache.positions(l)                                        # (1, n)
        new = torch.arange(old.shape[1], device=old.device).expand_as(old)
        delta = new - old                                               # (1, n)
        if bool((delta != 0).any()):
            keys = cache.keys(l)                                        # (1, Hkv, n, d) view
            keys.copy_(rerotate(keys, delta, engine.inv_freq[l]))
            old.copy_(new)
    cache.next_position = cache.length(0)


def step(ec: EvictingCache, engine, token: int, hooks=None, logits: str = "last") -> torch.Tensor:
    """Evict for the next token, then run it. Returns the engine's output for it."""
    t = ec.next_text_position
    evict_for(ec, engine, t)
    ids = torch.tensor([[token]], device=engine.device)
    positions = None if ec.policy.reassign else torch.tensor([[t]], device=engine.device)
    out = engine.forward(ids, ec.cache, positions=positions, hooks=hooks, logits=logits)
    ec.origin.append(t)
    return out


def adopt(engine, full: KVCache, policy: CachePolicy, n_tokens: int) -> EvictingCache:
    """Turn a cache that holds all n_tokens entries at text positions (e.g. from a masked
    prefill that applied `policy`) into the policy's cache state after those tokens."""
    ec = EvictingCache(full, policy, list(range(n_tokens)))
    evict_for(ec, engine, n_tokens)
    return ec
