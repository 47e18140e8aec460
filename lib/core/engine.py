"""The glass-box engine: this project's own forward pass over a loaded model's weights.

It knows nothing about text: token ids in, logits out. It is built from a ModelSpec and
EngineWeights only (reading a transformers model into them is the model layer's job:
lib/model/from_transformers.py); every per-visitor thing — the KV cache, positions, hooks —
is passed in by the caller, so one Engine can serve many sessions and never changes after
construction. The cache is anything that implements lib/core/cache/protocol.py.

Weight layout: every projection is kept as W^T, shape (in, out), contiguous, and applied as
`x @ W^T`. For one decoding token this is a matrix-vector product that streams the weight
once; on this CPU the (in, out) layout streams ~1.7x faster than transformers' (out, in)
`F.linear`. Several rows (a prompt, a batch of sessions) go to oneDNN's product instead
(lib/core/matmul.py). The token embedding is read from the same (640, 262,144) matrix as the tied LM
head, so it is stored once (lib/core/vocab_matrix.py, kept in column blocks for a faster LM head).

One layer (Gemma 3; Llama-family skips the norms marked *):

    h = rmsnorm(x)                                   "attn_in"
    q, k, v = h [Wq|Wk|Wv]  -> heads                (Qwen3/Gemma: rmsnorm on q and k)
    q, k = rope(q, pos), rope(k, pos)                "q", "k", "v"
    s = q k^T * scale  (+ mask)                      "scores"   (B, H, T, S)
    p = softmax(s)                                   "probs"
    a = (p v) Wo ; a = rmsnorm*(a)                   "attn_out"
    x = x + a                                        "resid_mid"
    g, u = rmsnorm(x) [Wgate|Wup]                    "mlp_in"
    m = (act(g) * u) Wdown                           "mlp_act"
    x = x + rmsnorm*(m)                              "resid_out"

Hooks: `hooks={name: fn(layer, tensor) -> tensor | None}` read (return None) or replace
(return a tensor) the activation at any name above, plus "embed" (layer -1) and "final"
(after the last norm). `lib.core.hooks.Recorder` builds reading hooks.

The layer's building blocks are functions in lib/core/layer.py. Unless a hook asks for an
activation inside them, a layer runs as two compiled calls, `attention_in` (to "q", "k", "v")
and `attention_out_and_mlp` (to "resid_out"), lib/core/one_call.py: in a busy server each eager
tensor operation waits for the GIL. Otherwise the same blocks run one by one, each activation
handed to its hook. The two give the same numbers bit for bit.
"""
from __future__ import annotations

from typing import Callable

import torch

from lib.core.engine_weights import EngineWeights, LayerWeights
from lib.core.cache.dense import KVCache
from lib.core.cache.protocol import KVCacheProtocol
from lib.core.cancellation import checkpoint
from lib.core.layer import (attention_in, attention_mask, attention_out_and_mlp, gated_activation, gqa_scores,
                            linear, qkv_heads, rms_norm, soft_cap, weighted_values)
from lib.core.one_call import compiled
from lib.core.spec import ModelSpec
from lib.core.rope import apply_rope, cos_sin, inv_frequencies
from lib.core.threads import on_all_cores

Hooks = dict[str, Callable[[int, torch.Tensor], torch.Tensor | None]]
# activations inside attention_in / attention_out_and_mlp: a hook on any of them runs the eager layer
INSIDE_THE_HALVES = frozenset({"attn_in", "scores", "probs", "attn_out", "resid_mid", "mlp_in", "mlp_act"})


class Engine:
    """Forward pass for a ModelSpec over EngineWeights (see lib/core/engine_weights.py).

    `rope`: per layer (inv_freq (d/2,), attention scaling) when the model scales RoPE (e.g.
    Llama 3; lib/model/from_transformers.py reads them); default: plain RoPE from the spec's
    thetas. `key` names the weights + device + dtype in result caches (lib/ui/runtime)."""

    def __init__(self, spec: ModelSpec, weights: EngineWeights,
                 rope: list[tuple[torch.Tensor, float]] | None = None, key: str = "engine-weights"):
        if not isinstance(weights, EngineWeights):
            raise TypeError("Engine(spec, weights) takes EngineWeights; build an engine from a transformers "
                            "model with lib.model.from_transformers.engine_from_hf(model)")
        self.spec, self.key = spec, key
        self.embed, self.lm_head = weights.embed, weights.lm_head   # E^T (D, V) each, usually one object
        self.final_norm, self.layers = weights.final_norm, weights.layers
        self.device, self.dtype = weights.embed.device, weights.embed.dtype
        # sqrt(hidden) rounded to the weights' dtype, as transformers does
        self._embed_scale = torch.tensor(spec.embed_scale, dtype=self.dtype, device=self.device)
        # The residual stream x. float16 cannot hold it: a few of Gemma's channels grow past
        # its 65,504 maximum (inf, then NaN logits), so with float16 weights x stays float32;
        # every matrix product still reads the weights in their own dtype.
        self.resid_dtype = torch.float32 if self.dtype == torch.float16 else self.dtype
        if rope is None:
            rope = [(inv_frequencies(spec.head_dim, theta), 1.0) for theta in spec.rope_thetas]
        self.inv_freq = [f.float().to(self.device) for f, _ in rope]       # (d/2,) per layer
        self.rope_scaling = [float(a) for _, a in rope]

    # ---- public API ----------------------------------------------------------------------
    def new_cache(self, batch: int = 1, capacity: int = 64) -> KVCache:
        return KVCache.for_spec(self.spec, batch, self.dtype, self.device, capacity)

    @on_all_cores                          # also when a session thread calls it (lib/core/threads.py)
    @torch.inference_mode()
    def forward(self, ids: torch.Tensor, cache: KVCacheProtocol, positions: torch.Tensor | None = None,
                hooks: Hooks | None = None, logits: str | slice = "last") -> torch.Tensor:
        """Run T new tokens through the model, appending their K/V to `cache`.

        ids: (B, T) token ids. positions: (B, T) absolute positions (default: continue from
        cache.next_position; -1 = padding). logits: "last" -> (B, 1, V), "all" -> (B, T, V),
        a slice of the T positions, or "none" -> the final hidden states (B, T, D).
        Before the forward and before each layer it calls lib.core.cancellation.checkpoint():
        when nobody wants the result any more it raises Cancelled, leaving `cache` half
        written (discard it).
        """
        checkpoint()
        spec, hooks = self.spec, hooks or {}
        B, T = ids.shape
        if positions is None:
            start = cache.next_position
            positions = torch.arange(start, start + T, device=ids.device).expand(B, T)
        cache.advance(positions)            # before the layers: a static cache must not sync

        x = self.embed.embed(ids).to(self.resid_dtype) * self._embed_scale.to(self.resid_dtype)  # (B, T, D)
        x = self._hook(hooks, "embed", -1, x)
        rope = {}  # (theta, scaling) -> cos, sin, shared by layers of the same type
        for l, w in enumerate(self.layers):
            checkpoint()                    # a long prefill stops within one layer's time
            key = (spec.rope_thetas[l], self.rope_scaling[l])
            if key not in rope:
                rope[key] = cos_sin(positions, self.inv_freq[l], self.rope_scaling[l])
            x = self._layer(l, w, x, positions, cache, rope[key], hooks)
        x = rms_norm(x, self.final_norm, spec.rms_eps, spec.norm_offset, self.dtype)
        x = self._hook(hooks, "final", spec.n_layers, x)
        if logits == "none":
            return x
        x = x[:, -1:] if logits == "last" else x if logits == "all" else x[:, logits]
        return self.head(x)                                            # (B, T', V)

    @on_all_cores
    def head(self, x: torch.Tensor) -> torch.Tensor:
        """The LM head on final (normed) hidden states: x (..., D) -> logits (..., V),
        soft-capped where the model does it (Gemma 2)."""
        return soft_cap(self.lm_head.logits(x), self.spec.final_softcap)

    @on_all_cores
    def head_argmax(self, x: torch.Tensor) -> torch.Tensor:
        """The LM head's argmax token ids: x (..., D) -> (...), the same as
        head(x).argmax(-1) without holding the (..., V) logits."""
        cap = self.spec.final_softcap
        return self.lm_head.argmax(x, transform=(lambda y: soft_cap(y, cap)) if cap else None)

    @on_all_cores
    def head_nll(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Each row's negative log-likelihood of its target token: x (N, D) final hidden
        states, targets (N,) -> (N,) -ln softmax(head(x))[target] in nats, without holding the
        (N, V) logits (the LM head one vocabulary chunk at a time, a running logsumexp)."""
        cap = self.spec.final_softcap
        return self.lm_head.nll(x, targets.to(self.lm_head.device, torch.long),
                                transform=(lambda y: soft_cap(y, cap)) if cap else None)

    @on_all_cores
    def head_compare(self, x: torch.Tensor, n: int, targets: torch.Tensor):
        """A reference run against K others over the same n positions, without holding any
        (rows, V) logits: x ((K + 1) n, D) final hidden states (the reference's n rows first),
        targets (n,) -> KL(p_ref || p_run) (K, n), -ln p_ref[target] (n,), -ln p_run[target]
        (K, n), top-1 agreement (K, n) (lib/core/online_softmax.running_comparison, float64)."""
        cap = self.spec.final_softcap
        return self.lm_head.compare(x, n, targets.to(self.lm_head.device, torch.long),
                                    transform=(lambda y: soft_cap(y, cap)) if cap else None)

    @on_all_cores
    def head_max_diff(self, x: torch.Tensor, y: torch.Tensor, rows: int = 16) -> tuple[float, float]:
        """(max |head(x) − head(y)|, max |head(y)|) over N rows of final hidden states x, y (N, D),
        `rows` rows at a time: the two (N, V) logits (1 MB a row with Gemma 3's 262,144-token
        vocabulary) are never held whole."""
        diff = scale = 0.0
        for s in range(0, x.shape[0], rows):
            a, b = self.head(x[None, s:s + rows])[0].float(), self.head(y[None, s:s + rows])[0].float()  # (r, V)
            diff, scale = max(diff, float((a - b).abs().max())), max(scale, float(b.abs().max()))
        return diff, scale

    # ---- internals -----------------------------------------------------------------------
    @staticmethod
    def _hook(hooks: Hooks, name: str, layer: int, x: torch.Tensor) -> torch.Tensor:
        fn = hooks.get(name)
        if fn is None:
            return x
        out = fn(layer, x)
        return x if out is None else out

    def _layer(self, l, w: LayerWeights, x, positions, cache: KVCacheProtocol, cos_sin_, hooks):
        if x.device.type == "cpu" and not hooks.keys() & INSIDE_THE_HALVES:   # (a GPU: see one_call.py)
            halves = compiled(attention_in), compiled(attention_out_and_mlp)
            if None not in halves:
                return self._layer_in_two_calls(halves, l, w, x, positions, cache, cos_sin_, hooks)
        return self._layer_step_by_step(l, w, x, positions, cache, cos_sin_, hooks)

    def _norms(self, w: LayerWeights):
        """The layer's optional norms: (q, k, attention output, MLP output), None where the
        architecture has none."""
        spec = self.spec
        return ((w.norm_q, w.norm_k) if spec.qk_norm else (None, None)) + \
            ((w.norm_attn_out, w.norm_mlp_out) if spec.sandwich_norm else (None, None))

    def _layer_in_two_calls(self, halves, l, w: LayerWeights, x, positions, cache: KVCacheProtocol, cos_sin_, hooks):
        """No hook inside the halves: the layer as two compiled calls (lib/core/layer.py), each
        giving the GIL up once (lib/core/one_call.py); hooks on q, k, v and resid_out still run."""
        spec, eps, off = self.spec, self.spec.rms_eps, float(self.spec.norm_offset)
        norm_q, norm_k, norm_attn_out, norm_mlp_out = self._norms(w)
        attention_in_, attention_out_and_mlp_ = halves
        q, k, v = attention_in_(x, w.norm_attn_in, w.w_qkv, w.b_qkv, norm_q, norm_k, *cos_sin_,
                                spec.n_heads, spec.n_kv_heads, eps, off, self.dtype)
        q, k, v = (self._hook(hooks, n, l, t) for n, t in (("q", q), ("k", k), ("v", v)))
        keys, values, k_pos = cache.append(l, k, v, positions)              # (B, Hkv, S, d), (B, S)
        x = attention_out_and_mlp_(x, q, keys, values, positions, k_pos, spec.windows[l], spec.attn_scale,
                                   spec.attn_softcap, torch.finfo(self.dtype).min, w.wo, norm_attn_out,
                                   w.norm_mlp_in, w.w_gate_up, w.w_down, norm_mlp_out,
                                   spec.activation == "gelu_tanh", eps, off, self.dtype)
        return self._hook(hooks, "resid_out", l, x)

    def _layer_step_by_step(self, l, w: LayerWeights, x, positions, cache: KVCacheProtocol, cos_sin_, hooks):
        """The same layer, one building block at a time, each activation handed to its hook."""
        spec, eps, off = self.spec, self.spec.rms_eps, float(self.spec.norm_offset)
        norm_q, norm_k, norm_attn_out, norm_mlp_out = self._norms(w)
        B, T, _ = x.shape
        h = self._hook(hooks, "attn_in", l, rms_norm(x, w.norm_attn_in, eps, off, self.dtype))
        q, k, v = qkv_heads(h, w.w_qkv, w.b_qkv, spec.n_heads, spec.n_kv_heads)    # (B, H|Hkv, T, d)
        if norm_q is not None:
            q, k = rms_norm(q, norm_q, eps, off), rms_norm(k, norm_k, eps, off)
        q, k = apply_rope(q, *cos_sin_), apply_rope(k, *cos_sin_)
        q, k, v = (self._hook(hooks, n, l, t) for n, t in (("q", q), ("k", k), ("v", v)))

        keys, values, k_pos = cache.append(l, k, v, positions)          # (B, Hkv, S, d), (B, S)
        a = self._attention(l, q, keys, values, positions, k_pos, hooks)  # (B, H, T, d)
        a = linear(a.transpose(1, 2).reshape(B, T, -1), w.wo)           # (B, T, D)
        if norm_attn_out is not None:
            a = rms_norm(a, norm_attn_out, eps, off, x.dtype)
        a = self._hook(hooks, "attn_out", l, a)
        x = self._hook(hooks, "resid_mid", l, x + a)

        h = self._hook(hooks, "mlp_in", l, rms_norm(x, w.norm_mlp_in, eps, off, self.dtype))
        act = self._hook(hooks, "mlp_act", l, gated_activation(h, w.w_gate_up, spec.activation == "gelu_tanh"))
        m = linear(act, w.w_down)                                        # (B, T, D)
        if norm_mlp_out is not None:
            m = rms_norm(m, norm_mlp_out, eps, off, x.dtype)
        return self._hook(hooks, "resid_out", l, x + m)

    def _attention(self, l, q, keys, values, q_pos, k_pos, hooks):
        """Grouped-query attention without copying K/V (see grouped_scores).
        q (B, H, T, d), keys/values (B, Hkv, S, d) -> (B, H, T, d)."""
        scores = gqa_scores(q, keys, self.spec)                              # (B, H, T, S)
        allowed = attention_mask(q_pos, k_pos, self.spec.windows[l])        # (B, 1, T, S)
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        scores = self._hook(hooks, "scores", l, scores)
        probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)            # (B, H, T, S)
        probs = self._hook(hooks, "probs", l, probs)
        return weighted_values(probs, values)
