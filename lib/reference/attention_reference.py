"""transformers' own eager attention as the reference for the attention pages (gqa,
attention-scaling): the function Gemma 3 / Llama run in `attn_implementation="eager"`, called on
our recorded q, k, v. It repeats K/V per group with transformers' `repeat_kv`, scales, masks
and softmaxes in its own code, so a bug in ours shows up as a difference.

Shapes: q (B, H, T, d), k/v (B, Hkv, S, d), allowed (B, 1, T, S) bool.
"""
from __future__ import annotations

from types import SimpleNamespace

import torch


def eager_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
                    allowed: torch.Tensor, softcap: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' Gemma 3 `eager_attention_forward`: (head outputs (B, H, T, d), weights (B, H, T, S))."""
    from transformers.models.gemma3.modeling_gemma3 import eager_attention_forward

    module = SimpleNamespace(num_key_value_groups=q.shape[1] // k.shape[1], training=False,
                             head_dim=q.shape[-1])
    additive = torch.zeros(allowed.shape, dtype=q.dtype).masked_fill(~allowed, torch.finfo(q.dtype).min)
    out, weights = eager_attention_forward(module, q, k, v, additive, dropout=0.0, scaling=float(scale),
                                           softcap=softcap)
    return out.transpose(1, 2), weights                                 # (B, H, T, d), (B, H, T, S)
