"""Attention logit scaling: softmax(q.k * scale) — why the scale exists and what it changes.

  q, k with d independent unit-variance components  ->  Var(q.k) = d
  so scores must be divided by sqrt(d) (or, in Gemma 3, multiplied by
  query_pre_attn_scalar ** -0.5 = 256 ** -0.5 = 1/16) to keep softmax out of saturation.

Multiplying a row of scores by any c > 0 keeps the row's order (argsort) but changes how
peaked softmax is: c -> 0 gives a uniform row, c -> inf a one-hot row. This is temperature,
applied inside every attention head. Masked entries stay masked at every scale.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lib.core.engine import Engine
from lib.core.hooks import Recorder


# ---- random vectors: where sqrt(d) comes from ----------------------------------------------
@dataclass
class DotVariance:
    dims: np.ndarray          # (n,) vector dimensions d
    var_raw: np.ndarray       # (n,) empirical Var(q.k)
    var_scaled: np.ndarray    # (n,) empirical Var(q.k / sqrt(d))
    n_samples: int


DOT_CHUNK = 2048          # sample pairs drawn at once (~50 MB of float64 at d = 1,024)


def random_dot_variance(dims, n_samples: int = 20_000, seed: int = 0) -> DotVariance:
    """Empirical variance of q.k for q, k ~ N(0, I_d), and of q.k / sqrt(d), per d.

    Contract: var_raw ≈ d and var_scaled ≈ 1 (sampling error ~ d * sqrt(2 / n_samples)).
    The samples are drawn DOT_CHUNK pairs at a time: all 20,000 pairs of d = 1,024 at once
    held ~490 MB of float64 for one (N,) result."""
    gen = torch.Generator().manual_seed(int(seed))
    raw, scaled = [], []
    for d in dims:
        parts = []
        for start in range(0, n_samples, DOT_CHUNK):
            n = min(DOT_CHUNK, n_samples - start)
            q = torch.randn(n, int(d), generator=gen, dtype=torch.float64)       # (n, d)
            k = torch.randn(n, int(d), generator=gen, dtype=torch.float64)       # (n, d)
            parts.append((q * k).sum(-1))                                        # (n,)
        dots = torch.cat(parts)                                                  # (N,)
        raw.append(float(dots.var()))
        scaled.append(float((dots / np.sqrt(d)).var()))
    return DotVariance(np.asarray(dims, dtype=np.int64), np.array(raw), np.array(scaled), n_samples)


# ---- the real model's scores --------------------------------------------------------------
@dataclass
class LayerScores:
    """One layer's raw dot products for a prompt (batch 1) and what the engine computed."""
    layer: int
    dots: torch.Tensor        # (H, T, T) q.k with no scale, float64; masked entries = -inf
    allowed: torch.Tensor     # (H, T, T) bool: causal (and window) mask
    engine_scores: torch.Tensor  # (H, T, T) the engine's "scores" (scaled + masked), float32
    engine_probs: torch.Tensor   # (H, T, T) the engine's "probs"
    model_scale: float        # the scale the engine ran at (the model's own 1/16 x factor)
    q_norm: torch.Tensor      # (H, T) |q| per head and position
    k_norm: torch.Tensor      # (T,)   |k| of the shared KV head, per position (head 0)


def layer_scores(engine: Engine, ids, layer: int, factor: float = 1.0) -> LayerScores:
    """Run the prompt `ids` (tuple of ints) once — with every layer's attention scale multiplied
    by `factor` (1 = the model as it is) — and recompute q.k for `layer` in float64 from the
    recorded q and k (after QK-norm and RoPE). GQA: query head h reads KV head h // G.
    `engine_scores` / `engine_probs` are what the engine itself computed at that scale."""
    rec = Recorder({"q", "k", "scores", "probs"}, layers={layer})
    hooks = rec.hooks()
    if factor != 1.0:
        record_scores, rescale = hooks["scores"], rescale_hook(float(factor))

        def scores_hook(l, s):
            s = rescale(l, s)
            record_scores(l, s)
            return s
        hooks["scores"] = scores_hook
    x = torch.tensor([list(ids)], device=engine.device)
    engine.forward(x, engine.new_cache(1, x.shape[1]), hooks=hooks, logits="none")
    q, k = rec[("q", layer)][0].double(), rec[("k", layer)][0].double()   # (H, T, d), (Hkv, T, d)
    G = engine.spec.group_size
    k_rep = k.repeat_interleave(G, dim=0)                                  # (H, T, d)
    dots = q @ k_rep.transpose(-1, -2)                                     # (H, T, T)
    scores = rec[("scores", layer)][0].float()                             # (H, T, T)
    allowed = scores > torch.finfo(scores.dtype).min
    return LayerScores(layer, dots.masked_fill(~allowed, float("-inf")), allowed, scores,
                       rec[("probs", layer)][0].float(), engine.spec.attn_scale * float(factor),
                       q.norm(dim=-1).float(), k[0].norm(dim=-1).float())


def scaled_probs(dots: torch.Tensor, scale: float) -> torch.Tensor:
    """softmax(dots * scale) over the last axis; -inf (masked) entries stay 0. scale >= 0."""
    x = dots * float(scale)
    x = torch.where(torch.isinf(dots), dots, x)      # keep the mask at scale 0 (0 * -inf = nan)
    return torch.softmax(x, dim=-1)


def row_entropy_bits(probs: torch.Tensor) -> torch.Tensor:
    """Entropy (bits) of every row of probs (..., S), with 0 log 0 = 0."""
    p = probs.double()
    logp = torch.where(p > 0, torch.log2(p), torch.zeros_like(p))
    return -(p * logp).sum(-1)


@dataclass
class RowStats:
    scales: np.ndarray        # (n,)
    mean_entropy: np.ndarray  # (n,) bits, averaged over the rows of one head
    mean_max: np.ndarray      # (n,) the largest weight of each row, averaged
    max_entropy: float        # mean over rows of log2(number of visible keys): the uniform limit


def scale_sweep(dots: torch.Tensor, allowed: torch.Tensor, scales) -> RowStats:
    """Row entropy and max weight of one head's rows (T, S) at each scale."""
    ent, mx = [], []
    for s in scales:
        p = scaled_probs(dots, float(s))                                  # (T, S)
        ent.append(float(row_entropy_bits(p).mean()))
        mx.append(float(p.max(-1).values.mean()))
    uniform = float(torch.log2(allowed.sum(-1).double()).mean())
    return RowStats(np.asarray(list(scales), dtype=np.float64), np.array(ent), np.array(mx), uniform)


def order_inversions(dots: torch.Tensor, probs: torch.Tensor, scale: float, margin: float = 1e-4) -> int:
    """Pairs of keys in one row whose order the attention weights reverse: dots[i] > dots[j]
    (by more than `margin` after scaling, so float32 rounding of near-ties is not counted) but
    probs[i] < probs[j]. dots (..., T, S) float64 with -inf where masked; probs (..., T, S) as
    computed by the code under test. Scaling by any c > 0 keeps every row's order: 0 expected."""
    d = dots.double()
    p = probs.double()
    visible = torch.isfinite(d)
    gap = (d[..., :, None] - d[..., None, :]) * float(scale)                    # (..., T, S, S)
    both = visible[..., :, None] & visible[..., None, :]
    higher = torch.nan_to_num(gap, nan=0.0) > margin
    reversed_ = p[..., :, None] < p[..., None, :]
    return int((both & higher & reversed_).sum())


# ---- the whole model with another scale ---------------------------------------------------
def rescale_hook(factor: float):
    """A "scores" hook multiplying the model's scaled scores by `factor` (so the effective
    scale becomes factor * model scale), leaving masked entries masked."""
    def hook(layer, scores):
        masked = scores == torch.finfo(scores.dtype).min
        return torch.where(masked, scores, scores * factor)
    return hook


def next_token_probs_with_scale(engine: Engine, ids, factor: float) -> torch.Tensor:
    """Next-token distribution (V,) when every layer's attention scale is multiplied by factor."""
    x = torch.tensor([list(ids)], device=engine.device)
    hooks = None if factor == 1.0 else {"scores": rescale_hook(float(factor))}
    logits = engine.forward(x, engine.new_cache(1, x.shape[1]), hooks=hooks)
    return torch.softmax(logits[0, -1].float().cpu(), dim=-1)


@dataclass
class ModelScaleSweep:
    factors: np.ndarray        # (n,) multipliers of the model's own scale
    top_ids: np.ndarray        # (K,) the K most likely next tokens at factor 1 (the model)
    top_probs: np.ndarray      # (n, K) their probabilities at each factor
    top1_ids: np.ndarray       # (n,) the argmax token at each factor
    top1_probs: np.ndarray     # (n,) its probability
    entropy_bits: np.ndarray   # (n,) entropy of the next-token distribution
    kl_from_model: np.ndarray  # (n,) KL(p_model || p_factor) in bits


def model_scale_sweep(engine: Engine, ids, factors, top_k: int = 8) -> ModelScaleSweep:
    """The next token at several attention scales (one forward each); factor 1 is always run
    as the reference (it is the model itself)."""
    factors = [float(f) for f in factors]
    ref = next_token_probs_with_scale(engine, ids, 1.0).double()                # (V,)
    top_ids = torch.topk(ref, top_k).indices
    rows = []
    for f in factors:
        p = ref if f == 1.0 else next_token_probs_with_scale(engine, ids, f).double()   # (V,)
        kl = float((ref * (torch.log2(ref.clamp_min(1e-300)) - torch.log2(p.clamp_min(1e-300)))).sum())
        rows.append((p[top_ids].numpy(), int(p.argmax()), float(p.max()),
                     float(row_entropy_bits(p)), max(kl, 0.0)))
    tp, t1, t1p, ent, kl = zip(*rows)
    return ModelScaleSweep(np.array(factors), top_ids.numpy(), np.array(tp), np.array(t1),
                           np.array(t1p), np.array(ent), np.array(kl))


def entropy_never_rises(dots: torch.Tensor, scales) -> tuple[bool, float]:
    """Row entropy of softmax(dots * s) for increasing scales s >= 0: (never rises, largest
    rise seen in bits). In exact arithmetic dH/ds = -s Var_p(dots) <= 0 for every row."""
    scales = sorted(float(s) for s in scales)
    ents = torch.stack([row_entropy_bits(scaled_probs(dots, s)) for s in scales])   # (n, ...)
    rise = float((ents[1:] - ents[:-1]).max()) if len(scales) > 1 else 0.0
    return rise <= 1e-9, rise
