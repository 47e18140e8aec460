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

from lib.core.engine import gqa_scores
from lib.core.cache.policy import CachePolicy, policy_window, query_slot, visible
from lib.core.cache.dense import KVCache
from lib.core.rope import rerotate


def policy_hooks(engine, cache: KVCache, policy: CachePolicy) -> dict:
    """Engine hooks for one forward over `cache` (which keeps every entry at its text
    position, starting from 0) that make attention follow `policy`."""
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
        k_pos = cache.positions(layer)[0]                 # (S,) text positions, 0..S-1
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
