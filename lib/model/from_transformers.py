"""Read a loaded transformers model into the engine: its weights in the engine's layout and,
when the model scales RoPE (e.g. Llama 3), the rotary frequencies it actually uses.

The engine itself (lib/core/engine.py) knows nothing about transformers; this is the one
place that reads a transformers model's parameters and rotary module.
"""
from __future__ import annotations

import torch

from lib.core.engine import Engine
from lib.core.engine_weights import EngineWeights, from_named
from lib.core.rope import inv_frequencies
from lib.core.spec import ModelSpec, spec_from_config


def weights_from_hf(spec: ModelSpec, hf_model, release_hf: bool = False) -> EngineWeights:
    """The model's parameters copied into the engine's layout. `release_hf=True` frees each
    original as soon as its copy exists, so the app never holds two copies (tests keep the
    transformers model intact to compare against it)."""
    params = dict(hf_model.named_parameters(remove_duplicate=False))

    def free(name):
        if release_hf:
            params[name].data = torch.empty(0, dtype=params[name].dtype, device=params[name].device)

    return from_named(spec, params.get, free)


def rope_from_hf(spec: ModelSpec, hf_model) -> list[tuple[torch.Tensor, float]]:
    """Per layer (inv_freq (d/2,), attention scaling): our own plain-RoPE frequencies when the
    model's equal them, the model's own for scaled variants (Llama 3, YaRN, ...)."""
    rot = getattr(hf_model.model, "rotary_emb", None)
    out = []
    for layer, lt in enumerate(spec.layer_types):
        ours = inv_frequencies(spec.head_dim, spec.rope_thetas[layer])
        theirs = next((t for n in (f"{lt}_inv_freq", "inv_freq") if (t := getattr(rot, n, None)) is not None), None)
        same = theirs is None or (theirs.shape == ours.shape and torch.allclose(theirs.float().cpu(), ours))
        scaling = getattr(rot, f"{lt}_attention_scaling", getattr(rot, "attention_scaling", 1.0))
        out.append((ours if same else theirs.float(), float(scaling)))
    return out


def engine_from_hf(hf_model, release_hf: bool = False, key: str | None = None) -> Engine:
    """An Engine over a loaded transformers model's weights (see weights_from_hf)."""
    spec = spec_from_config(hf_model.config)
    rope = rope_from_hf(spec, hf_model)          # before release: the rotary buffers stay anyway
    key = key or f"{getattr(hf_model, 'name_or_path', '')}|{hf_model.device}"
    return Engine(spec, weights_from_hf(spec, hf_model, release_hf), rope=rope, key=key)
