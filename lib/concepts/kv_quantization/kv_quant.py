"""A quantized KV cache on the engine, and what it does to attention and to the next token.

    KV bytes = 2 (K and V) x layers x kv_heads x head_dim x tokens x batch x bytes/element

Quantizing the cache shrinks the last factor, but the approximated keys and values stay on
the inference path: every later query is scored against the rounded keys (key error moves
the attention weights) and mixes the rounded values (value error moves the output).

`QuantizedKVCache` is a KVCache whose entries are fake-quantized (lib.concepts.quantization.quantize) when they
leave the `residual` newest entries (KIVI keeps recent tokens in full precision). The
entries that leave together form one block; "channel" and "tensor" scales are computed over
that block's tokens, "token" and "group" scales per token. Keys and values have separate
specs (KIVI: keys per channel, values per token). The engine sees an ordinary cache.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.concepts.quantization.activation_capture import Effect, compare
from lib.core.engine import Engine
from lib.core.hooks import Recorder
from lib.core.cache.dense import KVCache
from lib.concepts.quantization.quantize import QuantSpec, fake_quantize, storage_bytes


@dataclass(frozen=True)
class KVQuantPolicy:
    key: QuantSpec | None          # None = keys stay in full precision
    value: QuantSpec | None        # None = values stay in full precision
    residual: int = 0              # newest entries kept in full precision

    def label(self) -> str:
        k = self.key.label() if self.key else "fp"
        v = self.value.label() if self.value else "fp"
        return f"K {k} / V {v}" + (f" / recent {self.residual} fp" if self.residual else "")


def kv_bytes_formula(n_layers: int, n_kv_heads: int, head_dim: int, tokens: int, batch: int,
                     bytes_per_element: float) -> float:
    """2 x layers x kv_heads x head_dim x tokens x batch x bytes per element."""
    return 2 * n_layers * n_kv_heads * head_dim * tokens * batch * bytes_per_element


class QuantizedKVCache(KVCache):
    """KVCache whose entries older than the `residual` newest ones are fake-quantized."""

    def __init__(self, *args, policy: KVQuantPolicy, **kw):
        super().__init__(*args, **kw)
        self.policy = policy
        self._done = [0] * self.n_layers          # entries [0, done) are quantized
        self._qbytes = [0] * self.n_layers        # storage of those entries (codes + scales)

    @classmethod
    def from_cache(cls, cache: KVCache, policy: KVQuantPolicy) -> "QuantizedKVCache":
        """A quantized copy of a full-precision cache (its entries quantized as one block)."""
        k0 = cache.keys(0)
        q = cls(cache.n_layers, cache.batch, k0.shape[1], k0.shape[3], k0.dtype, k0.device,
                capacity=cache.length(0) + 64, policy=policy)
        for l in range(cache.n_layers):
            KVCache.append(q, l, cache.keys(l), cache.values(l), cache.positions(l))
            q._commit(l)
        q.next_position = cache.next_position
        return q

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor):
        super().append(layer, k, v, pos)
        self._commit(layer)
        return self.keys(layer), self.values(layer), self.positions(layer)

    def _commit(self, layer: int) -> None:
        """Quantize the entries that just left the residual window, as one block."""
        start, stop = self._done[layer], self.length(layer) - self.policy.residual
        if stop <= start:
            return
        for store, spec in ((self._k, self.policy.key), (self._v, self.policy.value)):
            block = store[layer][:, :, start:stop]                          # (B, Hkv, n, d)
            if spec is not None:
                store[layer][:, :, start:stop] = fake_quantize(block, spec)
                self._qbytes[layer] += storage_bytes(tuple(block.shape), spec)
            else:
                self._qbytes[layer] += block.numel() * block.element_size()
        self._done[layer] = stop

    def stored_bytes(self) -> int:
        """Bytes the cache would occupy: quantized blocks as codes + scales, the rest as is."""
        total = 0
        for l in range(self.n_layers):
            fp = self.length(l) - self._done[l]
            total += self._qbytes[l] + 2 * fp * self.keys(l)[:, :, :1].numel() * self.keys(l).element_size()
        return total


@dataclass
class KVRun:
    label: str
    effect: Effect                  # KL and perplexity on the evaluated tokens
    attn_tv: float                  # mean over layers/heads/queries of 0.5 * sum |p - p_ref|
    attn_max: float                 # max |p - p_ref| anywhere
    attn_max_layer0: float          # max |p - p_ref| in layer 0 (before any propagation)
    bytes_stored: int               # this policy's cache for all tokens
    bytes_full: int                 # the same cache in the engine's dtype


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


def run_policy(engine: Engine, ids: tuple[int, ...], n_eval: int, policy: KVQuantPolicy,
               _ref: Reference | None = None) -> KVRun:
    """Quantize the reference prefix cache with `policy`, run the last n_eval tokens against
    it and compare with the full-precision run. `_ref` = reference(engine, ids, n_eval), if
    already computed (underscore: not part of a cache key, it is determined by the others)."""
    ref = _ref if _ref is not None else reference(engine, ids, n_eval)
    x = torch.tensor([list(ids[ref.n_prefix:])], device=engine.device)     # (1, E)
    qc = QuantizedKVCache.from_cache(ref.prefix, policy)
    h, p = _eval(engine, qc, x)
    diffs = [(a - b).abs() for a, b in zip(p, ref.p_ref)]                    # (H, E, S) per layer
    tv = float(torch.stack([0.5 * d.sum(-1).mean() for d in diffs]).mean())
    return KVRun(policy.label(), compare(engine, tuple(ids[ref.n_prefix:]), ref.h_ref, h), tv,
                 float(max(d.max() for d in diffs)), float(diffs[0].max()), qc.stored_bytes(), ref.cache_nbytes)
