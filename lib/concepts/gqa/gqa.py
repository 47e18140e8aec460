"""Grouped-query attention (GQA): G query heads share one key/value head.

  MHA: every query head h has its own K_h, V_h          (n_kv_heads = n_heads)
  GQA: query head h reads K_{h // G}, V_{h // G}         (n_kv_heads = n_heads / G)
  MQA: all query heads read one K, V                     (n_kv_heads = 1)

The query projections stay separate, so the heads of a group still attend differently; only
K and V — exactly what a KV cache stores — are shared, so the cache shrinks by G. Gemma 3 270M
has 4 query heads and 1 KV head: its GQA is the MQA extreme (G = 4).

GQA is MHA with each K/V head repeated G times: the two give the same output.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lib.core.engine import Engine
from lib.core.layer import attention_mask, linear, rms_norm
from lib.core.hooks import Recorder
from lib.core.cache.dense import KVCache
from lib.reference.attention_reference import eager_attention


def repeat_kv(x: torch.Tensor, group: int) -> torch.Tensor:
    """(B, Hkv, S, d) -> (B, Hkv * group, S, d): KV head j becomes heads j*G .. j*G + G-1."""
    return x.repeat_interleave(group, dim=1)


def mha_attention(q, k, v, scale: float, allowed) -> torch.Tensor:
    """Plain multi-head attention, one K/V per query head.
    q, k, v (B, H, T|S, d); allowed (B, 1, T, S) bool -> (B, H, T, d)."""
    s = (q @ k.transpose(-1, -2)) * scale                               # (B, H, T, S)
    s = s.masked_fill(~allowed, torch.finfo(s.dtype).min)
    return torch.softmax(s.float(), dim=-1).to(q.dtype) @ v            # (B, H, T, d)


def gqa_attention(q, k, v, scale: float, allowed) -> torch.Tensor:
    """Grouped attention without copying K/V: the G query heads of a group are stacked along
    the query axis and multiply the one shared K. q (B, H, T, d), k/v (B, Hkv, S, d)."""
    B, H, T, d = q.shape
    Hkv, S = k.shape[1], k.shape[2]
    G = H // Hkv
    qg = q.reshape(B, Hkv, G * T, d)                                    # (B, Hkv, G*T, d)
    s = ((qg @ k.transpose(-1, -2)) * scale).view(B, H, T, S)           # (B, H, T, S)
    s = s.masked_fill(~allowed, torch.finfo(s.dtype).min)
    p = torch.softmax(s.float(), dim=-1).to(q.dtype)                    # (B, H, T, S)
    return (p.view(B, Hkv, G * T, S) @ v).view(B, H, T, d)


@dataclass
class HeadMaps:
    """One layer of the real model on a prompt (batch 1)."""
    layer: int
    probs: torch.Tensor        # (H, T, T) attention weights of every query head
    head_to_kv: list[int]      # query head h -> the KV head it reads
    head_distance: np.ndarray  # (H, H) mean over rows of total-variation distance between heads
    engine_diff: float         # max |o_proj(gqa_attention heads) - the engine's own "attn_out"|
    gqa_vs_mha_exact: bool     # torch.equal(gqa_attention heads, mha_attention heads on repeated K/V)
    heads_diff: float          # max |heads output: gqa_attention - mha_attention|
    hf_diff: float             # max |heads output: gqa_attention - transformers' eager attention|


def _attn_out(engine: Engine, layer: int, heads: torch.Tensor) -> torch.Tensor:
    """The layer's o_proj (+ Gemma's post-attention norm) on head outputs (B, H, T, d)."""
    spec, w = engine.spec, engine.layers[layer]
    B, H, T, d = heads.shape
    a = linear(heads.transpose(1, 2).reshape(B, T, H * d), w.wo)        # (B, T, D)
    return rms_norm(a, w.norm_attn_out, spec.rms_eps, spec.norm_offset) if spec.sandwich_norm else a


@torch.inference_mode()
def head_maps(engine: Engine, ids, layer: int) -> HeadMaps:
    """Record q, k, v and the attention of `layer` for the prompt, then recompute the layer's
    attention three times — grouped (shared K/V, `gqa_attention`), as MHA with K/V repeated, and
    with transformers' own eager attention — and compare them with each other and with what the
    engine itself produced ("attn_out")."""
    spec = engine.spec
    rec = Recorder({"q", "k", "v", "probs", "attn_out"}, layers={layer})
    x = torch.tensor([list(ids)], device=engine.device)
    engine.forward(x, engine.new_cache(1, x.shape[1]), hooks=rec.hooks(), logits="none")
    q, k, v = rec[("q", layer)], rec[("k", layer)], rec[("v", layer)]  # (1,H,T,d), (1,Hkv,T,d) x2
    pos = torch.arange(q.shape[2])[None]                                # (1, T)
    allowed = attention_mask(pos, pos, spec.windows[layer])             # (1, 1, T, T)
    heads_gqa = gqa_attention(q, k, v, spec.attn_scale, allowed)       # (1, H, T, d)
    G = spec.group_size
    heads_mha = mha_attention(q, repeat_kv(k, G), repeat_kv(v, G), spec.attn_scale, allowed)
    heads_hf, _ = eager_attention(q, k, v, spec.attn_scale, allowed)   # (1, H, T, d)
    engine_out = rec[("attn_out", layer)]
    ours_out = _attn_out(engine, layer, heads_gqa)
    probs = rec[("probs", layer)][0].float()                            # (H, T, T)
    H = probs.shape[0]
    dist = np.zeros((H, H))
    for a in range(H):
        for b in range(H):
            dist[a, b] = float(0.5 * (probs[a] - probs[b]).abs().sum(-1).mean())
    return HeadMaps(layer, probs, [h // G for h in range(H)], dist,
                    float((ours_out - engine_out).abs().max()), torch.equal(heads_gqa, heads_mha),
                    float((heads_gqa - heads_mha).abs().max()), float((heads_gqa - heads_hf).abs().max()))


# ---- cache size ------------------------------------------------------------------------------
@dataclass(frozen=True)
class KVLayout:
    name: str
    n_kv_heads: int


def kv_layouts(n_heads: int, n_kv_heads: int) -> list[KVLayout]:
    """MHA (one KV head per query head), every GQA grouping in between, MQA (one KV head);
    the model's own layout is among them."""
    counts = sorted({h for h in range(1, n_heads + 1) if n_heads % h == 0} | {n_kv_heads}, reverse=True)
    out = []
    for h in counts:
        name = "MHA" if h == n_heads else "MQA" if h == 1 else f"GQA-{n_heads // h}"
        out.append(KVLayout(name, h))
    return out


def kv_cache_bytes(n_layers: int, n_kv_heads: int, head_dim: int, tokens: int,
                   bytes_per_element: int = 4) -> int:
    """K and V of every layer for `tokens` tokens: 2 * layers * kv_heads * head_dim * tokens * bytes."""
    return 2 * n_layers * n_kv_heads * head_dim * tokens * bytes_per_element


def _with_kv_heads(x: torch.Tensor, n: int) -> torch.Tensor:
    """(B, Hkv, S, d) -> (B, n, S, d): repeat heads when n > Hkv, keep the first n otherwise
    (only the byte count of the result matters here)."""
    return repeat_kv(x, n // x.shape[1]) if n >= x.shape[1] else x[:, :n]


def allocated_kv_bytes(cache: KVCache) -> int:
    """Bytes of the storage allocated under the cache's keys and values (each storage counted
    once): what the memory allocator really handed out, spare capacity included; the int64
    positions the cache also keeps are not counted."""
    seen, total = set(), 0
    for l in range(cache.n_layers):
        for t in (cache.keys(l), cache.values(l)):
            s = t.untyped_storage()
            if s.data_ptr() not in seen:
                seen.add(s.data_ptr())
                total += s.nbytes()
    return total


@dataclass
class CacheBytesCheck:
    tokens: int
    rows: list[tuple[str, int, int, int]]   # (layout, kv heads, formula bytes, allocated bytes)


@torch.inference_mode()
def measured_cache_bytes(engine: Engine, ids) -> CacheBytesCheck:
    """Fill the model's real KV cache with the prompt (capacity = prompt length), then build the
    MHA and intermediate layouts' caches from it (each KV head repeated), and read the bytes of
    the storage every cache allocated for K and V."""
    spec = engine.spec
    x = torch.tensor([list(ids)], device=engine.device)
    cache = engine.new_cache(1, x.shape[1])
    engine.forward(x, cache, logits="none")
    T = cache.length(0)
    elem = cache.keys(0).element_size()
    rows = []
    for lay in kv_layouts(spec.n_heads, spec.n_kv_heads):
        if lay.n_kv_heads == spec.n_kv_heads:
            real = allocated_kv_bytes(cache)
        else:
            other = KVCache(spec.n_layers, 1, lay.n_kv_heads, spec.head_dim, cache.keys(0).dtype, "cpu", T)
            for l in range(spec.n_layers):
                other.append(l, _with_kv_heads(cache.keys(l).cpu(), lay.n_kv_heads),
                             _with_kv_heads(cache.values(l).cpu(), lay.n_kv_heads), cache.positions(l).cpu())
            real = allocated_kv_bytes(other)
        rows.append((lay.name, lay.n_kv_heads,
                     kv_cache_bytes(spec.n_layers, lay.n_kv_heads, spec.head_dim, T, elem), real))
    return CacheBytesCheck(T, rows)
