"""Convert the bundled GGUF's weights to both safetensors files, one tensor at a time.

Preparing the model used to dequantize all 236 tensors into one float32 state dict (1.07 GB),
then build the engine's layout from it (another 1.07 GB), then serialize: ~3.4 GB resident,
above what a small host (Streamlit Community Cloud: ~2.7 GB for everything) allows. Here
the two files are laid out first (lib/model/safetensors_writer.py) and filled as the tensors
are dequantized: one layer's tensors at a time (a few MB), and the 262,144 x 640 embedding in
slices of `chunk_rows` rows, each written to model.safetensors as is and into the engine's
vocabulary matrix. Peak memory is the libraries plus the tokenizer's build, not the model.

The engine keeps a Q8_0 embedding as the GGUF stores it (int8 values and their scales,
lib/core/vocab_matrix.Q8VocabMatrix: the same float32 values in a quarter of the bytes); any
other type is expanded, transposed, into the column blocks of a float32 VocabMatrix.

Contract: model.safetensors is byte-identical to what `safetensors.torch.save_file` wrote from
the whole dequantized state dict, and the engine file to `engine_weights.save` of the same
weights (a unit test compares both).
"""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from lib.core import engine_weights
from lib.core.vocab_matrix import Q8VocabMatrix
from lib.model.gguf_file import GGUFFile
from lib.model.safetensors_writer import SafetensorsWriter, dtype_name

MODEL_FILE = "model.safetensors"
EMBED, FINAL_NORM = "token_embd.weight", "output_norm.weight"
Q8_0 = 8                        # ggml's type number for Q8_0 blocks


def dequantized(gguf: GGUFFile, name: str, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Rows start..stop of GGUF tensor `name` as float32, in transformers' convention.

    llama.cpp stores Gemma's RMSNorm weights as (1 + w) because its norm multiplies by the
    weight directly; transformers' Gemma3RMSNorm multiplies by (1 + w), so we subtract 1."""
    w = gguf.dequantize_rows(name, start, gguf.tensors[name].shape[0] if stop is None else stop)
    if name.endswith("norm.weight"):
        w = w - np.float32(1.0)
    return np.ascontiguousarray(w)


def write_weights(gguf: GGUFFile, folder: Path, spec, hf_name: Callable[[str], str],
                  progress: Callable[[float, str], None] = lambda f, m: None,
                  chunk_rows: int = 2048) -> None:
    """Write <folder>/model.safetensors (transformers names) and the engine's file."""
    shapes = {hf_name(n): info.shape for n, info in gguf.tensors.items()}
    by_layer: dict[int, list[str]] = {}
    for n in gguf.tensors:
        m = re.match(r"blk\.(\d+)\.", n)
        if m:
            by_layer.setdefault(int(m.group(1)), []).append(n)
        elif n not in (EMBED, FINAL_NORM):
            raise ValueError(f"unexpected tensor {n!r} in a tied Gemma 3 GGUF")
    q8 = spec.tied_embeddings and gguf.tensors[EMBED].ggml_type == Q8_0
    engine_plan = {n: (dtype_name(dt), s) for n, (s, dt) in engine_weights.layout(spec, shapes, q8_embed=q8).items()}
    model_plan = {n: ("F32", s) for n, s in shapes.items()}
    with SafetensorsWriter(folder / MODEL_FILE, model_plan, {"format": "pt"}) as model, \
            SafetensorsWriter(folder / engine_weights.FILE, engine_plan, engine_weights.METADATA) as engine, \
            ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        for i in range(spec.n_layers):          # numpy releases the GIL: a layer's tensors in parallel
            names = by_layer.pop(i)
            named = {hf_name(n): torch.from_numpy(w) for n, w in zip(names, pool.map(lambda n: dequantized(gguf, n), names))}
            for n, t in named.items():
                model.write(n, t)
            layer = engine_weights.layer_from_named(spec, i, named.get)
            for name, t in engine_weights.flatten_layer(i, layer).items():
                engine.write(name, t)
            del named, layer
            progress((i + 1) / (spec.n_layers + 2), f"layer {i}")
        if by_layer:
            raise ValueError(f"GGUF layers beyond the config's {spec.n_layers}: {sorted(by_layer)}")
        norm = dequantized(gguf, FINAL_NORM)
        model.write(hf_name(FINAL_NORM), norm)
        engine.write("final_norm", norm)
        if q8:
            _write_q8_vocab(gguf, model, engine, hf_name(EMBED), chunk_rows)
        else:
            _write_vocab(gguf, model, engine, hf_name(EMBED), engine_plan["embed_blocks"][1], chunk_rows, pool)
        progress(1.0, "weights written")


def _write_q8_vocab(gguf: GGUFFile, model: SafetensorsWriter, engine: SafetensorsWriter,
                    hf_embed: str, chunk_rows: int) -> None:
    """A Q8_0 embedding E (V, D): dequantized into model.safetensors, and as its int8 values and
    scales into the engine's file (`embed_q8`, `embed_q8_scales`), `chunk_rows` rows at a time."""
    V, D = gguf.tensors[EMBED].shape
    raw = gguf.raw(EMBED).reshape(V, D // Q8VocabMatrix.GROUP, -1)        # (V, D / 32, 34): scale, 32 x int8
    for r in range(0, V, chunk_rows):
        part = Q8VocabMatrix.from_gguf_blocks(raw[r:r + chunk_rows])
        model.write(hf_embed, part.rows(0, part.vocab), row=r)         # the same values as dequantized(...)
        engine.write("embed_q8", part.q, row=r)
        engine.write("embed_q8_scales", part.scales, row=r)


def _write_vocab(gguf: GGUFFile, model: SafetensorsWriter, engine: SafetensorsWriter,
                 hf_embed: str, blocks_shape: tuple[int, ...], chunk_rows: int, pool) -> None:
    """The embedding E (V, D) into model.safetensors and, as E^T in column blocks
    (nb, D, V / nb), into the engine's file: block b is E[b W:(b + 1) W].T with W = V / nb."""
    nb, d, width = blocks_shape
    block = np.empty((d, width), dtype=np.float32)                   # (D, W): one block, 21 MB
    for b in range(nb):
        starts = range(0, width, chunk_rows)
        slices = pool.map(lambda r: dequantized(gguf, EMBED, b * width + r, b * width + min(r + chunk_rows, width)), starts)
        for r, rows in zip(starts, slices):                          # rows: (c, D)
            model.write(hf_embed, rows, row=b * width + r)
            block[:, r:r + rows.shape[0]] = rows.T
        engine.write("embed_blocks", block, row=b)
