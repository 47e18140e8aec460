"""A quantized KV cache on the engine, and what it does to attention and to the next token.

    KV bytes = 2 (K and V) x layers x kv_heads x head_dim x tokens x batch x bytes/element

Quantizing the cache shrinks the last factor, but the approximated keys and values stay on
the inference path: every later query is scored against the rounded keys (key error moves
the attention weights) and mixes the rounded values (value error moves the output).

The cache is lib.core.cache.quantized.QuantizedKVCache: entries that leave the `residual`
newest (KIVI keeps recent tokens in full precision) are quantized as one block and stored as
packed integer codes plus fp16 scales; attention reads them dequantized. "channel" and
"tensor" scales are computed over a block's tokens, "token" and "group" scales per token.
Keys and values have separate specs (KIVI: keys per channel, values per token).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lib.core.quantization.activation_capture import Effect, compare_runs
from lib.core.quantization.quantize import storage_bytes
from lib.core.cache.dense import KVCache
from lib.core.cache.quantized import KVQuantPolicy, QuantizedKVCache, QuantSpec
from lib.core.engine import Engine
from lib.core.hooks import Recorder
from lib.reference.quant_reference import QuantReport, cache_report

__all__ = ["KVQuantPolicy", "QuantizedKVCache", "QuantSpec", "kv_bytes_formula", "predicted_bytes", "KVRun",
           "Reference", "reference", "run_policies", "run_policy"]


def kv_bytes_formula(n_layers: int, n_kv_heads: int, head_dim: int, tokens: int, batch: int,
                     bytes_per_element: float) -> float:
    """2 x layers x kv_heads x head_dim x tokens x batch x bytes per element."""
    return 2 * n_layers * n_kv_heads * head_dim * tokens * batch * bytes_per_element


def predicted_bytes(spec, appends: tuple[int, ...], policy: KVQuantPolicy, batch: int = 1, fp_bytes: int = 4) -> int:
    """What a QuantizedKVCache should occupy after appends of these many tokens, from the
    formula: every append moves the entries beyond the `residual` newest into one block, which
    is stored as codes at b bits (kv_bytes_formula with b/8 bytes per element) plus one fp16
    scale per group (storage_bytes); the rest (and unquantized K or V) at fp_bytes each."""
    blocks, tail = [], 0
    for n in appends:
        tail += n
        if tail > policy.residual:
            blocks.append(tail - policy.residual)
            tail = policy.residual
    tokens = sum(appends)
    L, H, d = spec.n_layers, spec.n_kv_heads, spec.head_dim
    total = 0
    for side in (policy.key, policy.value):
        if side is None:
            total += L * H * d * batch * tokens * fp_bytes
            continue
        for q in blocks:
            codes = kv_bytes_formula(L, H, d, q, batch, side.bits / 8) / 2            # one of K, V
            scales = storage_bytes((batch, H, q, d), side) - math.ceil(batch * H * q * d * side.bits / 8)
            total += int(codes) + L * scales
        total += L * H * d * batch * tail * fp_bytes
    return total


@dataclass
class KVRun:
    label: str
    effect: Effect                  # KL and perplexity on the evaluated tokens
    attn_tv: float                  # mean over layers/heads/queries of 0.5 * sum |p - p_ref|
    attn_max: float                 # max |p - p_ref| anywhere
    attn_max_layer0: float          # max |p - p_ref| in layer 0 (before any propagation)
    bytes_stored: int               # this policy's cache for all tokens: storage allocated (measured)
    bytes_full: int                 # the same cache in the engine's dtype
    half_step: float = 0.0          # max |read back - original| / (float64 scale / 2) over the prefix cache
    quant: QuantReport | None = None  # its packed blocks against PyTorch's fake quantization (float64 scales)


@dataclass
class Reference:
    """The full-precision run: prefix cache, then the evaluated tokens against it."""
    prefix: KVCache                 # cache after ids[:-n_eval]
    h_ref: torch.Tensor             # (E, D) final hidden states of the evaluated tokens
    p_ref: list[torch.Tensor]       # per layer (H, E, S) attention weights
    key_channel_max: torch.Tensor   # (L, head_dim) max |k| per channel over the prefix
    value_channel_max: torch.Tensor # (L, head_dim)
    cache_nbytes: int               # KVCache.nbytes() of the full-precision cache, all tokens
    n_prefix: int
    n_eval: int


def _eval(engine: Engine, cache: KVCache, ids: torch.Tensor):
    """Forward the evaluation tokens against `cache`; (final hidden (E, D), probs per layer)."""
    rec = Recorder({"probs"})
    h = engine.forward(ids, cache, hooks=rec.hooks(), logits="none")
    probs = [rec[("probs", l)][0].float() for l in range(engine.spec.n_layers)]   # (H, E, S)
    return h[0].float().cpu(), probs


def reference(engine: Engine, ids: tuple[int, ...], n_eval: int) -> Reference:
    """Prefill ids[:-n_eval] in full precision, then run the last n_eval tokens against it."""
    x = torch.tensor([list(ids)], device=engine.device)                     # (1, T)
    P = x.shape[1] - n_eval
    if P < 1 or n_eval < 2:
        raise ValueError(f"need at least 1 prefix token and 2 evaluated tokens (got {x.shape[1]} tokens)")
    prefix = engine.new_cache(capacity=x.shape[1] + 8)
    engine.forward(x[:, :P], prefix, logits="none")
    chan_max = lambda get: torch.stack([get(l)[0].abs().amax(dim=(0, 1)).float().cpu()  # noqa: E731
                                        for l in range(prefix.n_layers)])
    full = prefix.clone()
    h_ref, p_ref = _eval(engine, full, x[:, P:])
    return Reference(prefix, h_ref, p_ref, chan_max(prefix.keys), chan_max(prefix.values), full.nbytes(), P, n_eval)


def run_policies(engine: Engine, ids: tuple[int, ...], n_eval: int, policies: tuple[KVQuantPolicy, ...],
                 _ref: Reference | None = None, _progress=None) -> list[KVRun]:
    """For each policy: quantize the reference prefix cache with it, run the last n_eval tokens
    against it and compare with the full-precision run; its packed blocks are compared with
    PyTorch's fake quantization on float64 scales (lib.reference.quant_reference.cache_report).
    The comparisons of all policies go through the LM head together (compare_runs: the
    vocabulary matrix read once, not once per policy). `_ref` = reference(engine, ids, n_eval),
    if already computed (underscore: not part of a cache key, it is determined by the others);
    `_progress(done, total)` after each policy's run."""
    ref = _ref if _ref is not None else reference(engine, ids, n_eval)
    x = torch.tensor([list(ids[ref.n_prefix:])], device=engine.device)     # (1, E)
    partial, hidden = [], []
    for i, policy in enumerate(policies):
        qc = QuantizedKVCache.from_cache(ref.prefix, policy)
        quant = cache_report(qc, ref.prefix)                                 # before new entries arrive
        h, p = _eval(engine, qc, x)
        diffs = [(a - b).abs() for a, b in zip(p, ref.p_ref)]                # (H, E, S) per layer
        tv = float(torch.stack([0.5 * d.sum(-1).mean() for d in diffs]).mean())
        partial.append((policy.label(), tv, float(max(d.max() for d in diffs)), float(diffs[0].max()), qc.nbytes(),
                        quant))
        hidden.append(h)
        if _progress is not None:
            _progress(i + 1, len(policies))
    effects = compare_runs(engine, tuple(ids[ref.n_prefix:]), ref.h_ref, hidden)
    return [KVRun(label, effect, tv, mx, mx0, nbytes, ref.cache_nbytes, quant.half_step, quant)
            for (label, tv, mx, mx0, nbytes, quant), effect in zip(partial, effects)]


def run_policy(engine: Engine, ids: tuple[int, ...], n_eval: int, policy: KVQuantPolicy,
               _ref: Reference | None = None) -> KVRun:
    """run_policies for one policy."""
    return run_policies(engine, ids, n_eval, (policy,), _ref=_ref)[0]
