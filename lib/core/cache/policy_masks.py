"""The fast equivalent of eviction: keep every entry, but mask what the policy evicted.

A key that eviction would have dropped gets the score finfo.min before softmax, so its
attention weight is exactly 0 — the same attention the evicting cache computes, and hence the
same outputs, while whole chunks of tokens run in one forward pass.

With `reassign` (StreamingLLM's cache slots) the recent keys keep their offsets t - j, so
their scores are unchanged; only the sink columns differ: there the query must be rotated as
if it sat at slot min(t, S + W - 1). The hook recomputes those columns from the query it
captured at the "q" hook and the sink keys (which never move: slots 0..S-1 = positions).
"""
from __future__ import annotations

import torch

from lib.core.layer import gqa_scores
from lib.core.cache.policy import CachePolicy, policy_window, query_slot, visible
from lib.core.cache.dense import KVCache
from lib.core.rope import rerotate


class PolicyReads:
    """A KVCache that keeps every entry (at text positions 0, 1, 2, ...) but hands attention,
    for each chunk of queries, only the entries that chunk can possibly read under `policy`
    and the model's own window: the sinks and the last `reach` positions before the chunk's
    first query. What is left out would get weight exactly 0 from the masks anyway, so the
    outputs are the same up to float rounding (softmax sums and P V over fewer zero terms);
    attention's work per chunk drops from the whole text so far to about reach + chunk keys.

    4,096 tokens of GPL-3 in 128-token chunks on this 2-core host, one policy's whole
    evaluation: window 32 17.9 -> 13.9 s, 4 sinks + 28 19.4 -> 14.4 s, dense (the model's
    512-token local windows) 17.0 -> 15.0 s (docs/BENCHMARKS.md, 2026-12-05 evening).
    Use it as the engine's cache and give it to `policy_hooks` (its keys / positions are the
    entries handed out last). Built for a fresh cache filled in one pass from position 0.

    `cache`: a KVCache that keeps every entry, for a caller that crops it and runs on (the
    sliding-window page's fact probe). None: PolicyReads keeps, per layer, only what a later
    chunk can still read (the sinks and the last reach - 1 positions): a streaming evaluation
    of 4,096 tokens then holds 3 global layers' whole K/V and ~640 entries of each other layer
    under dense (45 MB instead of 151 MB), a few hundred entries per layer under a window."""

    def __init__(self, engine, cache: KVCache | None, policy: CachePolicy):
        spec = engine.spec
        self.cache, self.n_layers = cache, spec.n_layers
        self._reach, self._sinks = [], []
        for l in range(spec.n_layers):
            limits = [w for w in (policy_window(policy, spec, l), spec.windows[l]) if w is not None]
            self._reach.append(min(limits) if limits else None)       # None: the whole past
            self._sinks.append(policy.sinks if policy_window(policy, spec, l) is not None else 0)
        self._handed: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        self._kept: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}   # cache None: per layer
        self._next = 0

    @property
    def next_position(self) -> int:
        return self._next if self.cache is None else self.cache.next_position

    def advance(self, positions: torch.Tensor) -> None:
        if self.cache is None:
            self._next = int(positions.max()) + 1
        else:
            self.cache.advance(positions)

    def nbytes(self) -> int:
        if self.cache is None:
            return sum(k.nbytes + v.nbytes for k, v, _ in self._kept.values())
        return self.cache.nbytes()

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor):
        """Store the chunk's entries; return (keys, values, positions) of the readable ones:
        positions 0..S-1 (the sinks) and first - reach + 1 .. the chunk's last."""
        first, reach, s = int(pos[0, 0]), self._reach[layer], self._sinks[layer]
        lo = 0 if reach is None else max(first - reach + 1, 0)
        if self.cache is None:
            out = self._append_kept(layer, k, v, pos, lo, s)
        else:
            out = self._read_whole(*self.cache.append(layer, k, v, pos), lo, s)
        self._handed[layer] = out
        return out

    @staticmethod
    def _read_whole(keys, values, k_pos, lo: int, s: int):
        """The readable entries of a cache holding every position 0..n-1 in order: views where
        they are one stretch."""
        if int(k_pos[0, -1]) != k_pos.shape[1] - 1:
            raise ValueError("PolicyReads needs entries at positions 0, 1, 2, ... in order")
        if lo <= s:                                   # the sinks and the recent keys touch
            return keys, values, k_pos
        if s == 0:                                    # one contiguous stretch: views, no copy
            return keys[:, :, lo:], values[:, :, lo:], k_pos[:, lo:]
        return tuple(torch.cat([x[..., :s, :], x[..., lo:, :]], dim=-2) for x in (keys, values)) + (
            torch.cat([k_pos[:, :s], k_pos[:, lo:]], dim=1),)                 # sinks, then the recent stretch

    def _append_kept(self, layer, k, v, pos, lo: int, s: int):
        """Kept entries + the chunk; hand out the readable ones and keep, for the next chunk
        (its first query at last + 1), the sinks and positions from last + 2 - reach on."""
        if layer in self._kept:
            kk, kv, kp = self._kept[layer]
            keys, values, k_pos = torch.cat([kk, k], dim=2), torch.cat([kv, v], dim=2), torch.cat([kp, pos], dim=1)
        else:
            if int(pos[0, 0]) != 0:
                raise ValueError("PolicyReads needs entries at positions 0, 1, 2, ... in order")
            keys, values, k_pos = k, v, pos
        reach, p = self._reach[layer], k_pos[0]                                  # (n,) text positions
        if reach is None:
            self._kept[layer] = keys, values, k_pos
            return keys, values, k_pos
        read = (p < s) | (p >= lo)
        out = (keys, values, k_pos) if bool(read.all()) else (keys[:, :, read], values[:, :, read], k_pos[:, read])
        keep = (p < s) | (p >= int(p[-1]) + 2 - reach)
        self._kept[layer] = keys[:, :, keep], values[:, :, keep], k_pos[:, keep]
        return out

    def keys(self, layer: int) -> torch.Tensor:
        return self._handed[layer][0]

    def positions(self, layer: int) -> torch.Tensor:
        return self._handed[layer][2]


def policy_hooks(engine, cache: "KVCache | PolicyReads", policy: CachePolicy) -> dict:
    """Engine hooks for one forward over `cache` (which keeps every entry at its text
    position, starting from 0, or hands out the readable ones: PolicyReads) that make
    attention follow `policy`."""
    spec = engine.spec
    if policy.kind == "dense":
        return {}
    captured: dict[int, torch.Tensor] = {}

    def on_q(layer, q):                                   # (B, H, T, d), rotated at text positions
        captured[layer] = q

    def on_scores(layer, scores):                         # (B, H, T, S), already causal-masked
        if policy_window(policy, spec, layer) is None:
            return None
        T = scores.shape[2]
        k_pos = cache.positions(layer)[0]                 # (S,) text positions of the keys read
        q_pos = k_pos[-T:]                                # this chunk was just appended
        if policy.reassign:
            scores = _sink_scores_at_slots(engine, cache, policy, layer, captured.pop(layer), q_pos, scores)
        allow = visible(policy, spec, layer, q_pos, k_pos)  # (T, S)
        return scores.masked_fill(~allow, torch.finfo(scores.dtype).min)

    hooks = {"scores": on_scores}
    if policy.reassign:
        hooks["q"] = on_q
    return hooks


def _sink_scores_at_slots(engine, cache, policy, layer, q, q_pos, scores):
    """Replace the S sink columns of scores (B, H, T, S_all) by q rotated to its cache slot
    against the sink keys."""
    spec, s = engine.spec, policy.sinks
    B, H, T, _ = q.shape
    k_pos = cache.positions(layer)[0]
    if k_pos.shape[0] < s or bool((k_pos[:s] != torch.arange(s, device=k_pos.device)).any()):
        raise ValueError("masked evaluation with sinks must start at position 0")
    delta = (query_slot(policy, q_pos) - q_pos)[None].expand(B, T)        # (B, T)
    q_slot = rerotate(q, delta, engine.inv_freq[layer])                   # (B, H, T, d)
    sink_k = cache.keys(layer)[:, :, :s]                                  # (B, Hkv, s, d)
    sink = gqa_scores(q_slot, sink_k, spec)                               # (B, H, T, s), the engine's own
    out = scores.clone()
    out[..., :s] = sink.to(out.dtype)
    return out
