"""Rotary position embedding (RoPE), written out.

Channel i of a head is paired with channel i + d/2 ("rotate half" layout, as transformers
uses). The pair is rotated by the angle  pos * inv_freq[i],  inv_freq[i] = theta^(-2i/d).
A query at position m and a key at position n then score  q . R(n - m) k : only the offset
matters. Keys in a KV cache are stored already rotated by their own absolute position.
"""
from __future__ import annotations

import torch


def inv_frequencies(head_dim: int, theta: float) -> torch.Tensor:
    """(head_dim/2,) rotation speed of each channel pair, fastest first."""
    return 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))


def cos_sin(positions: torch.Tensor, inv_freq: torch.Tensor, scaling: float = 1.0):
    """positions (B, T) -> cos, sin (B, T, head_dim), computed in float32."""
    freqs = positions[..., None].float() * inv_freq.to(positions.device)  # (B, T, d/2)
    emb = torch.cat((freqs, freqs), dim=-1)                                  # (B, T, d)
    return emb.cos() * scaling, emb.sin() * scaling


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (B, H, T, d) rotated by cos/sin (B, T, d). Returns a new tensor."""
    cos, sin = cos[:, None].to(x.dtype), sin[:, None].to(x.dtype)  # (B, 1, T, d)
    return x * cos + rotate_half(x) * sin


def rerotate(k: torch.Tensor, delta: torch.Tensor | int, inv_freq: torch.Tensor) -> torch.Tensor:
    """Move already-rotated keys k (B, H, S, d) by `delta` positions (scalar or (B, S)).

    Rotations compose: R(p + delta) = R(delta) R(p), so this equals recomputing the keys at
    their new positions (up to float rounding)."""
    B, _, S, _ = k.shape
    delta = torch.as_tensor(delta, device=k.device).expand(B, S)
    cos, sin = cos_sin(delta, inv_freq)
    return apply_rope(k, cos, sin)
