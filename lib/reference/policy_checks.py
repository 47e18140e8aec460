"""Live checks of the cache policies on real tokens (used by the pages' check panels).

- evicted_attention: run a masked forward and read every layer's attention probabilities
  against the policy's rule written out here in closed form (policy.py's table: keys
  t-W+1..t, sinks 0..S-1, the model's own window), not through `visible()`, which the mask
  hook itself applies: the weight on every key outside must be exactly 0, no key inside may
  get exactly 0 (a window one key too small zeroes one), and every row must still sum to 1.
- eviction_matches_mask: one token at a time on a cache that really evicts, against one
  masked forward: the final hidden states must agree, and the evicting cache's bytes must
  equal the kv_bytes formula.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.core.cache.policy import CachePolicy, kv_bytes
from lib.core.hooks import Recorder
from lib.core.cache.evicting import new_evicting_cache, step
from lib.core.cache.policy_masks import policy_hooks


@dataclass
class ZeroAttention:
    pairs: int          # evicted (layer, head, query, key) entries checked
    max_weight: float   # largest attention weight among them (0.0 when eviction is exact)
    row_sum_err: float  # max |sum of a row - 1|
    n_tokens: int = 0   # length of the text checked
    inside_zero: int = 0  # (layer, head, query, key) entries INSIDE the closed-form window with weight exactly 0


def closed_form_visible(policy: CachePolicy, spec, layer: int, n: int) -> torch.Tensor:
    """(n, n) bool: key k visible to query t at text positions 0..n-1, written from the rule
    (k <= t; t - k < W or k < S where the policy windows this layer; t - k < the model's own
    window), independently of lib.core.cache.policy.visible. Text positions only (no reassign)."""
    if policy.reassign:
        raise ValueError("the closed form is written for text positions (reassign=False)")
    t = torch.arange(n)[:, None]
    k = torch.arange(n)[None, :]
    d = t - k                                                          # (n, n) distance back
    see = d >= 0
    own = spec.windows[layer]
    if policy.kind != "dense" and (policy.layers == "all" or own is not None):
        see &= (d < policy.window) | (k < policy.sinks)
    if own is not None:
        see &= d < own
    return see


@torch.inference_mode()
def evicted_attention(engine, ids: tuple[int, ...], policy: CachePolicy) -> ZeroAttention:
    x = torch.tensor([list(ids)], device=engine.device)
    N = x.shape[1]
    cache = engine.new_cache(1, N)
    rec = Recorder({"probs"})
    hooks = {**policy_hooks(engine, cache, policy), **rec.hooks()}
    engine.forward(x, cache, hooks=hooks, logits="none")
    past = torch.ones(N, N, dtype=torch.bool).tril()                   # (T, S) causal
    pairs, mx, err, inside_zero = 0, 0.0, 0.0, 0
    for l in range(engine.spec.n_layers):
        p = rec[("probs", l)][0].float()                              # (H, T, S)
        see = closed_form_visible(policy, engine.spec, l, N)          # (T, S)
        gone = past & ~see                                            # only keys in the past
        pairs += int(gone.sum()) * p.shape[0]
        if gone.any():
            mx = max(mx, float(p[:, gone].max()))
        inside_zero += int((p[:, see] == 0).sum())
        err = max(err, float((p.sum(-1) - 1).abs().max()))
    return ZeroAttention(pairs, mx, err, N, inside_zero)


@dataclass
class EvictionParity:
    max_diff: float      # max |hidden(evicting) - hidden(masked)| over all steps
    scale: float         # max |hidden(masked)|: Gemma's final hidden states are large
    held: int            # entries the evicting cache holds at the end (all layers)
    full: int            # entries a dense cache would hold
    measured_bytes: int  # KVCache.nbytes() of the evicting cache
    formula_bytes: int   # cache_policies.kv_bytes

    @property
    def rel_diff(self) -> float:
        return self.max_diff / max(self.scale, 1e-30)


@torch.inference_mode()
def eviction_matches_mask(engine, ids: tuple[int, ...], policy: CachePolicy) -> EvictionParity:
    x = torch.tensor([list(ids)], device=engine.device)
    N = x.shape[1]
    cache = engine.new_cache(1, N)
    masked = engine.forward(x, cache, hooks=policy_hooks(engine, cache, policy), logits="none")[0]  # (N, D)
    ec = new_evicting_cache(engine, policy)
    diff = 0.0
    for t in range(N):
        h = step(ec, engine, int(x[0, t]), logits="none")[0, -1]                   # (D,)
        diff = max(diff, float((h.float() - masked[t].float()).abs().max()))
    held = sum(ec.cache.length(l) for l in range(engine.spec.n_layers))
    bpe = ec.cache.keys(0).element_size()
    return EvictionParity(diff, float(masked.abs().max()), held, N * engine.spec.n_layers, ec.cache.nbytes(),
                          kv_bytes(policy, engine.spec, N, bpe))


@dataclass
class NllParity:
    max_diff: float     # max |NLL(masked) - NLL(evicting)| in nats
    n: int              # positions compared
    after: int          # of which after eviction started (t >= window + sinks)
    held: int = 0       # most entries any layer of the evicting cache held at the end (measured)


def masked_matches_evicting(engine, ids: tuple[int, ...], policy: CachePolicy, chunk: int = 16) -> NllParity:
    """streaming_eval.nll_masked (chunks) against nll_evicting (one token at a time)."""
    from lib.decoding.streaming_eval import nll_evicting, nll_masked

    a = nll_masked(engine, ids, policy, chunk)
    b = nll_evicting(engine, ids, policy)
    start = (policy.window or len(ids)) + policy.sinks
    return NllParity(float(abs(a.nll - b.nll).max()), len(a.nll), int((a.positions >= start).sum()), b.held)
