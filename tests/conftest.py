"""Shared fixtures: tiny random models (fast, no weights needed) and the real bundled model.

Real-model fixtures are session-scoped: the model is prepared (once per machine) and loaded
once per test run."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
torch.set_num_threads(min(2, os.cpu_count() or 1))


def randomize(model, seed: int = 0):
    """Random weights everywhere, norms included (transformers inits Gemma norms to 0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    return model.eval()


def tiny_gemma3(seed: int = 0, window: int = 8):
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    cfg = Gemma3TextConfig(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=6,
                           num_attention_heads=4, num_key_value_heads=1, head_dim=16,
                           query_pre_attn_scalar=16, sliding_window=window, max_position_embeddings=256,
                           attn_implementation="eager")
    return randomize(Gemma3ForCausalLM(cfg), seed)


def tiny_llama(kind: str = "llama", seed: int = 0):
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config, Qwen3Config

    common = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  attn_implementation="eager")
    cfg = {"llama": LlamaConfig, "qwen2": Qwen2Config, "qwen3": Qwen3Config}[kind](**common)
    if kind == "llama":
        cfg.tie_word_embeddings = False
    return randomize(AutoModelForCausalLM.from_config(cfg), seed)


@pytest.fixture(scope="session")
def real_folder():
    from lib.model import bundled_model

    return bundled_model.prepare()


@pytest.fixture(scope="session")
def real_hf(real_model):
    """The bundled model through stock transformers (eager attention): the reference. Its
    config is the model's config; its weights are dequantized from the GGUF by `gguf`
    (lib/reference/gguf_weights.py), never read through the app's own writer (weights_stream
    writes the folder's safetensors with the app's Q8_0 reader): issue 32."""
    from lib.reference import gguf_weights, layer_reference

    return layer_reference.hf_model(real_model.config, gguf_weights.bundled())


@pytest.fixture(scope="session")
def real_model():
    """The bundled model as the app loads it (LoadedModel with our engine)."""
    from lib.model import model_loader

    return model_loader.load("bundled", "cpu")


@pytest.fixture(scope="session")
def real_engine_with_hf(real_hf):
    """Our engine on a copy of the reference model's weights (the reference stays intact)."""
    from lib.model.from_transformers import engine_from_hf

    return engine_from_hf(real_hf)


@pytest.fixture(scope="session")
def gpl_text() -> str:
    """A long human-written text every Debian machine ships (and a fallback if it does not)."""
    p = Path("/usr/share/common-licenses/GPL-3")
    if p.exists():
        return p.read_text()
    from lib.model.long_text import long_text

    return long_text()
