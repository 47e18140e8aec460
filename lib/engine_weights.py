"""The engine's weights in its own layout, built from transformers names, and a file for them.

Layout: every projection is stored transposed, W^T with shape (in, out), contiguous, so that
one decoding token streams it in the order this CPU reads fastest (see lib/engine.py). The
tied embedding / LM head is stored once, as E^T (hidden, vocab).

The bundled model's folder keeps these tensors in `engine.safetensors`, which `load` maps
into memory without copying: the weights then live in the operating system's page cache,
loading takes a fraction of a second and no second copy of the model ever exists.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable

import numpy as np
import torch

FILE = "engine.safetensors"


@dataclass
class LayerWeights:
    """One layer's parameters; projections transposed to (in, out)."""
    wq: torch.Tensor
    wk: torch.Tensor
    wv: torch.Tensor
    wo: torch.Tensor
    bq: torch.Tensor | None
    bk: torch.Tensor | None
    bv: torch.Tensor | None
    w_gate: torch.Tensor
    w_up: torch.Tensor
    w_down: torch.Tensor
    norm_attn_in: torch.Tensor
    norm_mlp_in: torch.Tensor
    norm_q: torch.Tensor | None = None
    norm_k: torch.Tensor | None = None
    norm_attn_out: torch.Tensor | None = None
    norm_mlp_out: torch.Tensor | None = None


@dataclass
class EngineWeights:
    embed_t: torch.Tensor            # (D, V)
    lm_head_t: torch.Tensor          # (D, V); the same tensor as embed_t when tied
    final_norm: torch.Tensor         # (D,)
    layers: list[LayerWeights]


# transformers parameter names (per layer) for each LayerWeights field; "T" = transpose it
_LAYER = {
    "wq": ("self_attn.q_proj.weight", "T"), "wk": ("self_attn.k_proj.weight", "T"),
    "wv": ("self_attn.v_proj.weight", "T"), "wo": ("self_attn.o_proj.weight", "T"),
    "bq": ("self_attn.q_proj.bias", ""), "bk": ("self_attn.k_proj.bias", ""),
    "bv": ("self_attn.v_proj.bias", ""),
    "w_gate": ("mlp.gate_proj.weight", "T"), "w_up": ("mlp.up_proj.weight", "T"),
    "w_down": ("mlp.down_proj.weight", "T"),
    "norm_attn_in": ("input_layernorm.weight", ""),
    "norm_q": ("self_attn.q_norm.weight", ""), "norm_k": ("self_attn.k_norm.weight", ""),
}
_SANDWICH = {"norm_mlp_in": ("pre_feedforward_layernorm.weight", ""),
             "norm_attn_out": ("post_attention_layernorm.weight", ""),
             "norm_mlp_out": ("post_feedforward_layernorm.weight", "")}
_PLAIN = {"norm_mlp_in": ("post_attention_layernorm.weight", "")}


def from_named(spec, get: Callable[[str], torch.Tensor | None],
               done: Callable[[str], None] = lambda name: None) -> EngineWeights:
    """Build EngineWeights from transformers-named tensors. `get(name)` returns a tensor or
    None; `done(name)` is called once a tensor has been copied (to free the original)."""

    def take(name: str, transpose: bool):
        t = get(name)
        if t is None:
            return None
        out = t.detach().t().contiguous() if transpose else t.detach().clone()
        done(name)
        return out

    layers = []
    for i in range(spec.n_layers):
        names = {**_LAYER, **(_SANDWICH if spec.sandwich_norm else _PLAIN)}
        layers.append(LayerWeights(**{f: take(f"model.layers.{i}.{n}", how == "T") for f, (n, how) in names.items()}))
    embed_t = take("model.embed_tokens.weight", True)
    head_t = embed_t if spec.tied_embeddings else take("lm_head.weight", True)
    return EngineWeights(embed_t, head_t, take("model.norm.weight", False), layers)


def flatten(w: EngineWeights) -> dict[str, torch.Tensor]:
    out = {"embed_t": w.embed_t, "final_norm": w.final_norm}
    if w.lm_head_t is not w.embed_t:
        out["lm_head_t"] = w.lm_head_t
    for i, layer in enumerate(w.layers):
        for f in fields(LayerWeights):
            t = getattr(layer, f.name)
            if t is not None:
                out[f"layers.{i}.{f.name}"] = t
    return out


def save(w: EngineWeights, path: Path) -> None:
    from safetensors.torch import save_file

    save_file(flatten(w), str(path), metadata={"layout": "lib.engine_weights v1"})


def load(path: Path, n_layers: int) -> EngineWeights:
    """Memory-map a file written by `save` (copy-on-write: no copy is made unless written)."""
    path = Path(path)
    with path.open("rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    mm = np.memmap(path, dtype=np.uint8, mode="c")
    dtypes = {"F32": np.float32, "F16": np.float16, "BF16": None}
    tensors = {}
    for name, info in header.items():
        start, end = info["data_offsets"]
        raw = mm[8 + n + start:8 + n + end]
        if dtypes[info["dtype"]] is None:  # bfloat16 has no numpy dtype: view the bits
            t = torch.from_numpy(raw.view(np.int16)).view(torch.bfloat16)
        else:
            t = torch.from_numpy(raw.view(dtypes[info["dtype"]]))
        tensors[name] = t.view(info["shape"])
    layers = [LayerWeights(**{f.name: tensors.get(f"layers.{i}.{f.name}") for f in fields(LayerWeights)})
              for i in range(n_layers)]
    embed_t = tensors["embed_t"]
    return EngineWeights(embed_t, tensors.get("lm_head_t", embed_t), tensors["final_norm"], layers)


def to(w: EngineWeights, device, dtype) -> EngineWeights:
    """The same weights on another device / dtype (copies only when something changes)."""
    conv = lambda t: None if t is None else t.to(device=device, dtype=dtype if t.is_floating_point() else t.dtype)  # noqa: E731
    embed_t = conv(w.embed_t)
    head_t = embed_t if w.lm_head_t is w.embed_t else conv(w.lm_head_t)
    layers = [LayerWeights(**{f.name: conv(getattr(l, f.name)) for f in fields(LayerWeights)}) for l in w.layers]
    return EngineWeights(embed_t, head_t, conv(w.final_norm), layers)
