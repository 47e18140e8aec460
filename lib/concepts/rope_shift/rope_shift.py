"""RoPE position shift: scores depend on relative offsets, cached keys on absolute rotations.

RoPE rotates channel pair i of q and k by the angle  pos * w_i,  w_i = theta^(-2i/d)
(lib/core/rope.py). Then  R(m) q . R(n) k = q . R(n - m) k : shifting query AND key by the same
delta leaves every score unchanged. A KV cache stores keys already rotated by the position
they were computed at. Reusing them at other positions therefore needs the matching extra
rotation R(delta) (lib.core.rope.rerotate); relabelling their positions alone leaves the old
rotation inside the numbers, and attention sees the wrong offsets.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from lib.core.engine import Engine
from lib.core.hooks import Recorder
from lib.core.cache.dense import KVCache
from lib.core.rope import cos_sin, apply_rope, inv_frequencies, rerotate


# ---- the rotation itself ----------------------------------------------------------------------
@dataclass
class Spectrum:
    thetas: tuple[float, ...]
    wavelengths: np.ndarray     # (n_theta, d/2) tokens per full turn of each channel pair: 2 pi / w_i
    pairs_full_turn: np.ndarray  # (n_theta,) pairs that complete >= 1 turn within `context` tokens
    context: int


def spectrum(head_dim: int, thetas, context: int) -> Spectrum:
    """Wavelength of every channel pair for each RoPE base theta."""
    wl = np.stack([(2 * math.pi / inv_frequencies(head_dim, th)).double().numpy() for th in thetas])
    return Spectrum(tuple(thetas), wl, (wl <= context).sum(-1), context)


def pair_angles(inv_freq: torch.Tensor, pairs, positions) -> np.ndarray:
    """(len(pairs), len(positions)) rotation angle pos * w_i of the chosen pairs, wrapped to
    (-pi, pi] so a full turn is visible as a jump."""
    pos = torch.as_tensor(list(positions), dtype=torch.float64)
    w = inv_freq.double()[list(pairs)]
    ang = w[:, None] * pos[None, :]                                           # (P, N)
    return torch.atan2(torch.sin(ang), torch.cos(ang)).numpy()


# ---- real q and k -----------------------------------------------------------------------------
@dataclass
class RawQK:
    """One layer's q and k for a prompt with the rotation removed (as they were before RoPE)."""
    layer: int
    q: torch.Tensor          # (H, T, d) un-rotated queries, float64
    k: torch.Tensor          # (Hkv, T, d) un-rotated keys, float64
    inv_freq: torch.Tensor   # (d/2,) this layer's RoPE speeds
    scale: float


def raw_qk(engine: Engine, ids, layer: int) -> RawQK:
    """Record q, k (after RoPE at positions 0..T-1) and rotate them back by -pos."""
    rec = Recorder({"q", "k"}, layers={layer})
    x = torch.tensor([list(ids)], device=engine.device)
    engine.forward(x, engine.new_cache(1, x.shape[1]), hooks=rec.hooks(), logits="none")
    inv = engine.inv_freq[layer].cpu().double()
    q, k = rec[("q", layer)].double(), rec[("k", layer)].double()          # (1, H, T, d), (1, Hkv, T, d)
    back = -torch.arange(q.shape[2])[None]                                 # (1, T)
    return RawQK(layer, rerotate(q, back, inv)[0], rerotate(k, back, inv)[0], inv, engine.spec.attn_scale)


def _cos_sin64(positions: torch.Tensor, inv_freq: torch.Tensor):
    """cos, sin (1, N, d) in float64, so large positions do not round the angles."""
    ang = positions.double()[:, None] * inv_freq.double()[None]           # (N, d/2)
    emb = torch.cat((ang, ang), dim=-1)[None]                              # (1, N, d)
    return emb.cos(), emb.sin()


def score_at(raw: RawQK, head: int, i: int, j: int, m, n) -> np.ndarray:
    """Score of query token i placed at positions m (array) and key token j at positions n:
    (R(m) q_i) . (R(n) k_j) * scale, float64. GQA: head h reads KV head h // G."""
    m = torch.as_tensor(np.asarray(m), dtype=torch.float64)
    n = torch.as_tensor(np.asarray(n), dtype=torch.float64)
    G = raw.q.shape[0] // raw.k.shape[0]
    q = raw.q[head, i].expand(len(m), -1)[None, None]                      # (1, 1, N, d)
    k = raw.k[head // G, j].expand(len(n), -1)[None, None]
    qr = apply_rope(q, *_cos_sin64(m, raw.inv_freq))
    kr = apply_rope(k, *_cos_sin64(n, raw.inv_freq))
    return ((qr * kr).sum(-1) * raw.scale)[0, 0].numpy()


def joint_shift_error(raw: RawQK, deltas) -> float:
    """max |scores(all positions + delta) - scores(positions 0..T-1)| over all heads, all
    (query, key) pairs and the given deltas (float32 rotations, as the engine does)."""
    T = raw.q.shape[1]
    G = raw.q.shape[0] // raw.k.shape[0]
    k = raw.k.repeat_interleave(G, 0).float()[None]                       # (1, H, T, d)
    q = raw.q.float()[None]

    def scores(offset):
        pos = torch.arange(T)[None] + int(offset)                          # (1, T)
        cs = cos_sin(pos, raw.inv_freq.float())
        return (apply_rope(q, *cs) @ apply_rope(k, *cs).transpose(-1, -2)) * raw.scale  # (1, H, T, T)

    ref = scores(0)
    return max(float((scores(d) - ref).abs().max()) for d in deltas)


# ---- moving cached keys ---------------------------------------------------------------------------
def moved_cache(cache: KVCache, delta: int, inv_freqs, rerotate_keys: bool) -> KVCache:
    """A new cache holding `cache`'s entries relabelled to positions + delta; with
    `rerotate_keys` the keys also get the extra rotation R(delta) of their layer."""
    out = KVCache(cache.n_layers, cache.batch, cache.keys(0).shape[1], cache.keys(0).shape[3],
                  cache.keys(0).dtype, cache.keys(0).device, cache.length(0) + 8)
    for l in range(cache.n_layers):
        k = cache.keys(l)
        if rerotate_keys:
            k = rerotate(k, delta, inv_freqs[l].to(k.device)).to(k.dtype)
        out.append(l, k, cache.values(l), cache.positions(l) + delta)
    out.next_position = cache.next_position + delta
    return out


@torch.inference_mode()
def prompt_cache(engine: Engine, ids) -> KVCache:
    """The KV cache of all but the last prompt token, computed at positions 0..T-2."""
    x = torch.tensor([list(ids)[:-1]], device=engine.device)
    cache = engine.new_cache(1, x.shape[1] + 1)
    engine.forward(x, cache, logits="none")
    return cache


@dataclass
class ShiftOutcome:
    delta: int
    logits: dict[str, torch.Tensor]   # "recompute" | "rerotated" | "relabelled" -> (V,) next-token logits
    key_error: dict[str, float]       # max |cached keys - recomputed keys| over all layers
    key_scale: float                  # max |recomputed keys|, to read key_error against


VARIANTS = ("recompute", "rerotated", "relabelled")


@torch.inference_mode()
def variants_hidden(engine: Engine, ids, delta: int, base: KVCache):
    """The prompt's last token at position delta + T - 1, its final hidden state (3, D) under
    each of VARIANTS (see shift_outcome), the moved caches' key errors and the recomputed
    keys' scale."""
    x = torch.tensor([list(ids)], device=engine.device)                    # (1, T)
    T = x.shape[1]
    truth = engine.new_cache(1, T)
    pos = torch.arange(delta, delta + T, device=x.device)[None]
    rows = [engine.forward(x, truth, positions=pos, logits="none")[0, -1]]          # (D,)
    errs = {}
    for name, rot in (("rerotated", True), ("relabelled", False)):
        c = moved_cache(base, delta, engine.inv_freq, rot)
        errs[name] = max(float((c.keys(l) - truth.keys(l)[:, :, :T - 1]).abs().max())
                         for l in range(c.n_layers))
        rows.append(engine.forward(x[:, -1:], c, positions=pos[:, -1:], logits="none")[0, -1])
    scale = max(float(truth.keys(l).abs().max()) for l in range(truth.n_layers))
    return torch.stack(rows), errs, scale


@torch.inference_mode()
def shift_outcome(engine: Engine, ids, delta: int, base: KVCache | None = None) -> ShiftOutcome:
    """The prompt's last token predicts the next one with the first T-1 tokens taken from a
    cache computed at positions 0..T-2 and moved to delta..delta+T-2:
      recompute  : the whole prompt run at positions delta..delta+T-1 (the truth)
      rerotated  : cached keys rotated by R(delta) and relabelled
      relabelled : positions changed, keys left with their old rotation
    `base` (optional) is the cache of the first T-1 tokens at positions 0..T-2, to share it
    between several deltas; it is not modified. The three last hidden states share one LM
    head call."""
    return _outcomes(engine, ids, (int(delta),), base)[0]


@torch.inference_mode()
def _outcomes(engine: Engine, ids, deltas, base: KVCache | None = None) -> list[ShiftOutcome]:
    """shift_outcome at each delta, every variant's last hidden state through one LM head call."""
    if len(ids) < 2:
        raise ValueError("need at least 2 tokens")
    if base is None:
        base = prompt_cache(engine, ids)
    parts = [variants_hidden(engine, ids, int(d), base) for d in deltas]
    logits = engine.head(torch.cat([h for h, _, _ in parts])[None])[0].float().cpu()   # (3 len(deltas), V)
    out = []
    for i, (d, (_, errs, scale)) in enumerate(zip(deltas, parts)):
        rows = logits[3 * i:3 * i + 3]
        out.append(ShiftOutcome(int(d), dict(zip(VARIANTS, rows)), errs, scale))
    return out


@dataclass
class ShiftSweep:
    deltas: np.ndarray
    max_logit_diff: dict[str, np.ndarray]   # per variant: max |logits - recompute| at each delta
    top1_same: dict[str, np.ndarray]        # per variant: argmax equals recompute's argmax
    key_error: dict[str, np.ndarray]


def shift_sweep(engine: Engine, ids, deltas) -> ShiftSweep:
    """shift_outcome at every delta, reduced to numbers (one LM head call for all of them)."""
    outs = _outcomes(engine, ids, tuple(int(d) for d in deltas))
    names = ("rerotated", "relabelled")
    diff = {n: np.array([float((o.logits[n] - o.logits["recompute"]).abs().max()) for o in outs]) for n in names}
    same = {n: np.array([int(o.logits[n].argmax()) == int(o.logits["recompute"].argmax()) for o in outs])
            for n in names}
    kerr = {n: np.array([o.key_error[n] for o in outs]) for n in names}
    return ShiftSweep(np.array(list(deltas)), diff, same, kerr)


def softmax_np(logits: torch.Tensor) -> np.ndarray:
    """Probabilities (V,) from logits (V,), as numpy float64 (for the bar chart)."""
    return torch.softmax(logits.double(), dim=-1).numpy()
