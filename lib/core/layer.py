"""One transformer layer, as functions of tensors: what lib/core/engine.py's Engine runs.

Each building block is a plain function (a normalization, the q/k/v heads, the attention mask,
grouped-query scores, the weighted values, the gated MLP), and `attention_in` and
`attention_out_and_mlp` put them together into a whole layer without hooks, either side of
the KV cache. The engine runs those two compiled by TorchScript unless a hook asks for an
activation inside them (one GIL round trip each instead of ~50: lib/core/one_call.py); then it
calls the same building blocks one by one and hands each activation to its hook. Every function here is
written so that TorchScript can compile it: typed arguments, no globals (defaults instead).
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from lib.core.cache.protocol import PAD_POSITION
from lib.core.matmul import rows_times
from lib.core.rope import apply_rope
from lib.core.spec import ModelSpec


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, offset: float,
             dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """x / rms(x) * (offset + weight), computed in float32 (as transformers does), returned
    in `dtype` (default: x's)."""
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (y * (offset + weight.float())).to(dtype if dtype is not None else x.dtype)


def attention_mask(q_pos: torch.Tensor, k_pos: torch.Tensor, window: Optional[int],
                   pad: int = PAD_POSITION) -> torch.Tensor:
    """Which keys each query may see: (B, T) x (B, S) positions -> (B, 1, T, S) bool.

    Causal (key position <= query position), inside the window if any
    (key position > query position - window), and never a padding entry (position `pad`, -1)."""
    q, k = q_pos[:, None, :, None], k_pos[:, None, None, :]
    allowed = (k <= q) & (k != pad)
    if window is not None:
        allowed &= k > q - window
    return allowed


def linear(x: torch.Tensor, w_t: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """x (..., in) @ w_t (in, out) [+ bias] -> (..., out); several rows through oneDNN
    (lib/core/matmul.py: 2-3x faster than the default BLAS on this CPU)."""
    y = rows_times(x, w_t)
    return y if bias is None else y + bias


def soft_cap(x: torch.Tensor, cap: Optional[float]) -> torch.Tensor:
    """tanh(x / cap) * cap: squashes values smoothly into (-cap, cap) (Gemma 2 scores and
    logits); no cap (None or 0) returns x itself."""
    if cap is None or cap == 0.0:
        return x
    return torch.tanh(x / cap) * cap


def grouped_scores(q: torch.Tensor, keys: torch.Tensor, scale: float, cap: Optional[float]) -> torch.Tensor:
    """Scaled (and soft-capped) attention scores with grouped-query attention, without copying
    K: the G = H / Hkv query heads that share a KV head are stacked along the query axis.
    q (B, H, T, d), keys (B, Hkv, S, d) -> scores (B, H, T, S), before any mask."""
    B, H, T, d = q.shape[0], q.shape[1], q.shape[2], q.shape[3]
    Hkv = keys.shape[1]
    qg = q.reshape(B, Hkv, (H // Hkv) * T, d)                                # (B, Hkv, G*T, d)
    scores = (qg @ keys.transpose(-1, -2)) * scale                           # (B, Hkv, G*T, S)
    return soft_cap(scores.view(B, H, T, keys.shape[2]), cap)                # (B, H, T, S)


def gqa_scores(q: torch.Tensor, keys: torch.Tensor, spec: ModelSpec) -> torch.Tensor:
    """grouped_scores with the model's own scale and soft cap."""
    return grouped_scores(q, keys, spec.attn_scale, spec.attn_softcap)


def qkv_heads(h: torch.Tensor, w_qkv: torch.Tensor, b_qkv: Optional[torch.Tensor], n_heads: int,
              n_kv_heads: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The normed stream h (B, T, D) -> q (B, H, T, d), k and v (B, Hkv, T, d), in one product."""
    B, T = h.shape[0], h.shape[1]
    d = w_qkv.shape[1] // (n_heads + 2 * n_kv_heads)
    q, k, v = linear(h, w_qkv, b_qkv).split([n_heads * d, n_kv_heads * d, n_kv_heads * d], dim=-1)
    return (q.view(B, T, n_heads, d).transpose(1, 2), k.view(B, T, n_kv_heads, d).transpose(1, 2),
            v.view(B, T, n_kv_heads, d).transpose(1, 2))


def weighted_values(probs: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Attention's output heads: probs (B, H, T, S) @ values (B, Hkv, S, d) -> (B, H, T, d),
    the G query heads of a KV head stacked as in grouped_scores (no copy of V)."""
    B, H, T, S = probs.shape[0], probs.shape[1], probs.shape[2], probs.shape[3]
    Hkv = values.shape[1]
    return (probs.view(B, Hkv, (H // Hkv) * T, S) @ values).view(B, H, T, values.shape[3])


def gated_activation(h: torch.Tensor, w_gate_up: torch.Tensor, gelu: bool) -> torch.Tensor:
    """The MLP's hidden activation: act(h W_gate) * (h W_up), (B, T, D) -> (B, T, I)."""
    g, u = linear(h, w_gate_up).chunk(2, dim=-1)                             # one product
    return (F.gelu(g, approximate="tanh") if gelu else F.silu(g)) * u


def attention_in(x: torch.Tensor, norm_in: torch.Tensor, w_qkv: torch.Tensor, b_qkv: Optional[torch.Tensor],
                 norm_q: Optional[torch.Tensor], norm_k: Optional[torch.Tensor], cos: torch.Tensor,
                 sin: torch.Tensor, n_heads: int, n_kv_heads: int, eps: float, offset: float,
                 dtype: torch.dtype) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A layer up to its KV cache, without hooks: x (B, T, D) -> rotated q (B, H, T, d), rotated
    k and v (B, Hkv, T, d). The same operations as Engine._layer's first half."""
    q, k, v = qkv_heads(rms_norm(x, norm_in, eps, offset, dtype), w_qkv, b_qkv, n_heads, n_kv_heads)
    if norm_q is not None and norm_k is not None:                            # Qwen3 / Gemma 3
        q, k = rms_norm(q, norm_q, eps, offset), rms_norm(k, norm_k, eps, offset)
    return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v


def attention_out_and_mlp(x: torch.Tensor, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                          q_pos: torch.Tensor, k_pos: torch.Tensor, window: Optional[int], scale: float,
                          cap: Optional[float], lowest: float, wo: torch.Tensor, norm_attn_out: Optional[torch.Tensor],
                          norm_mlp_in: torch.Tensor, w_gate_up: torch.Tensor, w_down: torch.Tensor,
                          norm_mlp_out: Optional[torch.Tensor], gelu: bool, eps: float, offset: float,
                          dtype: torch.dtype) -> torch.Tensor:
    """The rest of a layer, without hooks: attention over the cache's keys/values (B, Hkv, S, d)
    at positions k_pos (B, S), its output projection, the MLP, both residual adds -> x (B, T, D).
    `lowest`: the scores' dtype's lowest value (masked scores). The same operations as
    Engine._layer's second half."""
    B, T = x.shape[0], x.shape[1]
    scores = grouped_scores(q, keys, scale, cap)                             # (B, H, T, S)
    scores = scores.masked_fill(~attention_mask(q_pos, k_pos, window), lowest)
    probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
    a = linear(weighted_values(probs, values).transpose(1, 2).reshape(B, T, -1), wo)   # (B, T, D)
    if norm_attn_out is not None:
        a = rms_norm(a, norm_attn_out, eps, offset, x.dtype)
    x = x + a
    m = linear(gated_activation(rms_norm(x, norm_mlp_in, eps, offset, dtype), w_gate_up, gelu), w_down)
    if norm_mlp_out is not None:
        m = rms_norm(m, norm_mlp_out, eps, offset, x.dtype)
    return x + m
