"""An independent oracle for moving cached keys: transformers' own `apply_rotary_pos_emb`
(Gemma 3's rotate-half layout) with cos/sin built here in float64 from each layer's θ, against
this project's `moved_cache` (lib.core.rope.rerotate with the engine's inverse frequencies).

Contract: `hf_moved_key_error(engine, ids, delta)` -> (max |our moved keys − transformers'
rotation of the same cached keys by Δ| over all layers, max |keys|). Assumes plain RoPE (no
scaling), as the bundled Gemma 3 270M uses."""
from __future__ import annotations

import torch
from transformers.models.gemma3.modeling_gemma3 import apply_rotary_pos_emb

from lib.concepts.rope_shift import rope_shift
from lib.core.engine import Engine


def hf_rotate_by(k: torch.Tensor, delta: int, theta: float) -> torch.Tensor:
    """k (B, H, S, d) rotated by the extra angle delta * w_i, w_i = theta^(-2i/d), through
    transformers' apply_rotary_pos_emb (float64 angles)."""
    d = k.shape[-1]
    inv = 1.0 / (float(theta) ** (torch.arange(0, d, 2, dtype=torch.float64) / d))   # (d/2,)
    ang = torch.full((1, k.shape[2], 1), float(delta), dtype=torch.float64) * inv      # (1, S, d/2)
    emb = torch.cat((ang, ang), dim=-1)                                                # (1, S, d)
    _, out = apply_rotary_pos_emb(k.double(), k.double(), emb.cos(), emb.sin())
    return out                                                                         # (B, H, S, d)


@torch.inference_mode()
def hf_moved_key_error(engine: Engine, ids, delta: int) -> tuple[float, float]:
    """(max abs error, max |key|) of the re-rotated cache against transformers' rotation."""
    base = rope_shift.prompt_cache(engine, ids)
    ours = rope_shift.moved_cache(base, int(delta), engine.inv_freq, True)
    err = scale = 0.0
    for l in range(base.n_layers):
        ref = hf_rotate_by(base.keys(l).cpu(), int(delta), engine.spec.rope_thetas[l])  # (1, Hkv, S, d)
        err = max(err, float((ours.keys(l).cpu().double() - ref).abs().max()))
        scale = max(scale, float(ref.abs().max()))
    return err, scale
