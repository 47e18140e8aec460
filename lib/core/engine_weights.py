"""The engine's weights in its own layout, built from transformers names, and a file for them.

Layout: every projection is stored transposed, W^T with shape (in, out), contiguous, so that
one decoding token streams it in the order this CPU reads fastest (see lib/core/engine.py).
Projections that read the same input are concatenated along `out`: [Wq | Wk | Wv] is one
(D, (H + 2 Hkv) d) matrix and [W_gate | W_up] one (D, 2 I) matrix, so a decoding step makes
4 matrix products per layer instead of 7 (fewer calls, longer streams: ~5 ms less per token
on this 2-core CPU). The tied embedding / LM head is stored once, as E^T (hidden, vocab) in
column blocks (lib/core/vocab_matrix.py) -- or, for the bundled model, whose GGUF stores it as
Q8_0, as those int8 values and scales (`embed_q8`, `embed_q8_scales`: the same float32 values,
a quarter of the bytes).

The bundled model's folder keeps these tensors in `engine.safetensors`, which `load` maps
into memory without copying: the weights then live in the operating system's page cache,
loading takes a fraction of a second and no second copy of the model ever exists.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from lib.core.vocab_matrix import MAX_BLOCKS, Q8VocabMatrix, VocabMatrix

FILE = "engine.safetensors"
METADATA = {"layout": "lib.core.engine_weights v3 (fused qkv, gate_up; blocked or Q8_0 vocab)"}


@dataclass
class LayerWeights:
    """One layer's parameters; projections transposed to (in, out)."""
    w_qkv: torch.Tensor              # (D, (H + 2 Hkv) d) = [Wq | Wk | Wv]
    b_qkv: torch.Tensor | None       # ((H + 2 Hkv) d,) for models with q/k/v biases (Qwen2)
    wo: torch.Tensor                 # (H d, D)
    w_gate_up: torch.Tensor          # (D, 2 I) = [W_gate | W_up]
    w_down: torch.Tensor             # (I, D)
    norm_attn_in: torch.Tensor
    norm_mlp_in: torch.Tensor
    norm_q: torch.Tensor | None = None
    norm_k: torch.Tensor | None = None
    norm_attn_out: torch.Tensor | None = None
    norm_mlp_out: torch.Tensor | None = None


@dataclass
class EngineWeights:
    embed: VocabMatrix | Q8VocabMatrix     # E^T (D, V)
    lm_head: VocabMatrix | Q8VocabMatrix   # (D, V); the same object as embed when tied
    final_norm: torch.Tensor         # (D,)
    layers: list[LayerWeights]


# transformers parameter names (per layer) for each LayerWeights field; "T" = transpose it.
# A field with several names is their concatenation along the output axis.
_LAYER = {
    "w_qkv": (("self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"), "T"),
    "b_qkv": (("self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"), ""),
    "wo": (("self_attn.o_proj.weight",), "T"),
    "w_gate_up": (("mlp.gate_proj.weight", "mlp.up_proj.weight"), "T"),
    "w_down": (("mlp.down_proj.weight",), "T"),
    "norm_attn_in": (("input_layernorm.weight",), ""),
    "norm_q": (("self_attn.q_norm.weight",), ""), "norm_k": (("self_attn.k_norm.weight",), ""),
}
_SANDWICH = {"norm_mlp_in": (("pre_feedforward_layernorm.weight",), ""),
             "norm_attn_out": (("post_attention_layernorm.weight",), ""),
             "norm_mlp_out": (("post_feedforward_layernorm.weight",), "")}
_PLAIN = {"norm_mlp_in": (("post_attention_layernorm.weight",), "")}


def _fields(spec) -> dict:
    return {**_LAYER, **(_SANDWICH if spec.sandwich_norm else _PLAIN)}


def layer_from_named(spec, i: int, get: Callable[[str], torch.Tensor | None],
                     done: Callable[[str], None] = lambda name: None) -> LayerWeights:
    """Layer i's LayerWeights from transformers-named tensors (see `from_named`). A converter
    that streams the model calls this once per layer, holding only that layer's tensors."""

    def take(name: str, transpose: bool):
        t = get(name)
        if t is None:
            return None
        out = t.detach().t().contiguous() if transpose else t.detach().clone()
        done(name)
        return out

    def take_all(names: tuple[str, ...], transpose: bool):
        present = [get(n) is not None for n in names]
        if not any(present):
            return None
        if not all(present):
            raise ValueError(f"only some of {names} exist: cannot concatenate them")
        parts = [take(n, transpose) for n in names]
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)   # along `out`

    return LayerWeights(**{f: take_all(tuple(f"model.layers.{i}.{n}" for n in names), how == "T")
                           for f, (names, how) in _fields(spec).items()})


def from_named(spec, get: Callable[[str], torch.Tensor | None],
               done: Callable[[str], None] = lambda name: None) -> EngineWeights:
    """Build EngineWeights from transformers-named tensors. `get(name)` returns a tensor or
    None; `done(name)` is called once a tensor has been copied (to free the original)."""

    def take_vocab(name: str) -> VocabMatrix:
        e = get(name).detach()                                 # (V, D)
        out = VocabMatrix.from_dense(e.t())                    # one copy, straight into blocks
        done(name)
        return out

    layers = [layer_from_named(spec, i, get, done) for i in range(spec.n_layers)]
    embed = take_vocab("model.embed_tokens.weight")
    head = embed if spec.tied_embeddings else take_vocab("lm_head.weight")
    norm = get("model.norm.weight")
    final = None
    if norm is not None:
        final = norm.detach().clone()
        done("model.norm.weight")
    return EngineWeights(embed, head, final, layers)


def flatten_layer(i: int, layer: LayerWeights) -> dict[str, torch.Tensor]:
    """Layer i's tensors under their names in the engine file ('layers.{i}.{field}')."""
    return {f"layers.{i}.{f.name}": getattr(layer, f.name)
            for f in fields(LayerWeights) if getattr(layer, f.name) is not None}


def _flatten_vocab(prefix: str, m: VocabMatrix | Q8VocabMatrix) -> dict[str, torch.Tensor]:
    if isinstance(m, Q8VocabMatrix):
        return {f"{prefix}_q8": m.q, f"{prefix}_q8_scales": m.scales}
    return {f"{prefix}_blocks": m.blocks}


def flatten(w: EngineWeights) -> dict[str, torch.Tensor]:
    out = {**_flatten_vocab("embed", w.embed), "final_norm": w.final_norm}
    if w.lm_head is not w.embed:
        out.update(_flatten_vocab("lm_head", w.lm_head))
    for i, layer in enumerate(w.layers):
        out.update(flatten_layer(i, layer))
    return out


def layout(spec, shapes: dict[str, tuple[int, ...]], dtype=torch.float32,
           q8_embed: bool = False) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """The engine file's tensors (name -> (shape, dtype)) for a model whose transformers-named
    tensors have `shapes`, without building them: what `flatten(from_named(...))` yields
    (a unit test holds the two equal), for a converter that streams into the file.
    `q8_embed`: the tied embedding is kept as Q8_0 values and scales (Q8VocabMatrix)."""
    def joined(names: tuple[str, ...], transpose: bool):
        got = [shapes[n] for n in names if n in shapes]
        if not got:
            return None
        if len(got) != len(names):
            raise ValueError(f"only some of {names} exist: cannot concatenate them")
        if transpose:                                          # (out, in) each -> (in, sum out)
            return (got[0][1], sum(s[0] for s in got))
        return (*got[0][:-1], sum(s[-1] for s in got))

    def vocab(name: str):
        v, d = shapes[name]                                    # E (V, D) -> blocks (nb, D, V / nb)
        nb = math.gcd(v, MAX_BLOCKS)
        return (nb, d, v // nb)

    dtypes = {}                                                # where a tensor's dtype is not `dtype`
    if q8_embed:
        if not spec.tied_embeddings:
            raise ValueError("a Q8_0 vocabulary matrix is only laid out for tied embeddings")
        v, d = shapes["model.embed_tokens.weight"]
        out = {"embed_q8": (v, d), "embed_q8_scales": (v, d // Q8VocabMatrix.GROUP)}
        dtypes = {"embed_q8": torch.int8, "embed_q8_scales": torch.float32}
    else:
        out = {"embed_blocks": vocab("model.embed_tokens.weight")}
    if "model.norm.weight" in shapes:
        out["final_norm"] = tuple(shapes["model.norm.weight"])
    if not spec.tied_embeddings:
        out["lm_head_blocks"] = vocab("lm_head.weight")
    for i in range(spec.n_layers):
        for f, (names, how) in _fields(spec).items():
            shape = joined(tuple(f"model.layers.{i}.{n}" for n in names), how == "T")
            if shape is not None:
                out[f"layers.{i}.{f}"] = tuple(shape)
    return {n: (s, dtypes.get(n, dtype)) for n, s in out.items()}


def save(w: EngineWeights, path: Path) -> None:
    from safetensors.torch import save_file

    save_file(flatten(w), str(path), metadata=METADATA)


def _header(path: Path) -> tuple[int, dict]:
    """(header length, {tensor name: info}) of a safetensors file, metadata left out."""
    with Path(path).open("rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return n, header


def parameter_count(path: Path) -> int:
    """The model parameters in an engine file (a Q8_0 matrix's scales are not parameters)."""
    return sum(math.prod(info["shape"]) for name, info in _header(path)[1].items() if not name.endswith("_q8_scales"))


def load(path: Path, n_layers: int) -> EngineWeights:
    """Memory-map a file written by `save` (copy-on-write: no copy is made unless written)."""
    path = Path(path)
    n, header = _header(path)
    mm = np.memmap(path, dtype=np.uint8, mode="c")
    dtypes = {"F32": np.float32, "F16": np.float16, "BF16": None, "I8": np.int8}
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
    def vocab(prefix: str):
        if f"{prefix}_q8" in tensors:
            return Q8VocabMatrix(tensors[f"{prefix}_q8"], tensors[f"{prefix}_q8_scales"])
        return VocabMatrix(tensors[f"{prefix}_blocks"]) if f"{prefix}_blocks" in tensors else None

    embed = vocab("embed")
    head = vocab("lm_head") or embed
    return EngineWeights(embed, head, tensors["final_norm"], layers)


def to(w: EngineWeights, device, dtype) -> EngineWeights:
    """The same weights on another device / dtype (copies only when something changes)."""
    conv = lambda t: None if t is None else t.to(device=device, dtype=dtype if t.is_floating_point() else t.dtype)  # noqa: E731
    embed = w.embed.to(device, dtype)
    head = embed if w.lm_head is w.embed else w.lm_head.to(device, dtype)
    layers = [LayerWeights(**{f.name: conv(getattr(l, f.name)) for f in fields(LayerWeights)}) for l in w.layers]
    return EngineWeights(embed, head, conv(w.final_norm), layers)
