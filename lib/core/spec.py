"""What the engine needs to know about an architecture, read from a transformers config.

Two families are supported, and the differences between them are all flags here:

| field            | Gemma 3                         | Llama / Qwen2 / Qwen3 / SmolLM |
|------------------|---------------------------------|--------------------------------|
| norm_offset      | 1.0  (RMSNorm scales by 1 + w)  | 0.0 (scales by w)              |
| embed_scale      | sqrt(hidden)                    | 1.0                            |
| attn_scale       | query_pre_attn_scalar ** -0.5   | head_dim ** -0.5               |
| qk_norm          | yes                             | Qwen3 only                     |
| sandwich_norm    | yes (post-attn / post-MLP norm) | no                             |
| activation       | gelu (tanh approx.)             | silu                           |
| windows          | 512 on local layers, None global| None                           |
"""
from __future__ import annotations

import math
from dataclasses import dataclass

SUPPORTED_MODEL_TYPES = ("gemma3_text", "llama", "qwen2", "qwen3", "mistral")


@dataclass(frozen=True)
class ModelSpec:
    family: str                      # "gemma3" or "llama"
    model_type: str                  # transformers' model_type
    n_layers: int
    hidden: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    rms_eps: float
    norm_offset: float
    embed_scale: float
    attn_scale: float
    qk_norm: bool
    sandwich_norm: bool
    activation: str                  # "gelu_tanh" | "silu"
    layer_types: tuple[str, ...]     # "sliding_attention" | "full_attention" per layer
    windows: tuple[int | None, ...]  # sliding window per layer (None = sees everything)
    rope_thetas: tuple[float, ...]   # RoPE base per layer
    attn_softcap: float | None
    final_softcap: float | None
    tied_embeddings: bool
    bos_id: int | None
    eos_ids: tuple[int, ...]
    max_context: int

    @property
    def group_size(self) -> int:
        """Query heads per KV head (GQA): 4 for Gemma 3 270M."""
        return self.n_heads // self.n_kv_heads

    def kv_bytes_per_token(self, bytes_per_element: int = 4) -> int:
        """K and V for one token across all layers: 2 * layers * kv_heads * head_dim * bytes."""
        return 2 * self.n_layers * self.n_kv_heads * self.head_dim * bytes_per_element


def _as_tuple(x) -> tuple[int, ...]:
    if x is None:
        return ()
    return tuple(x) if isinstance(x, (list, tuple)) else (x,)


def spec_from_config(cfg) -> ModelSpec:
    """Build a ModelSpec from a transformers text config; ValueError for unsupported models."""
    mt = getattr(cfg, "model_type", "")
    if mt not in SUPPORTED_MODEL_TYPES:
        raise ValueError(f"model type {mt!r} is not supported (supported: Gemma 3 text, Llama, "
                         "Qwen2, Qwen3, Mistral/SmolLM-style Llama models)")
    gemma = mt.startswith("gemma3")
    n_layers = cfg.num_hidden_layers
    n_heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // n_heads
    layer_types = tuple(getattr(cfg, "layer_types", None) or ["full_attention"] * n_layers)
    window = getattr(cfg, "sliding_window", None)
    windows = tuple(window if t == "sliding_attention" else None for t in layer_types)
    rope = getattr(cfg, "rope_parameters", None) or {}
    if gemma:
        thetas = tuple(float(rope[t]["rope_theta"]) for t in layer_types)
    else:
        theta = float(rope.get("rope_theta", getattr(cfg, "rope_theta", 10_000.0)))
        thetas = (theta,) * n_layers
    return ModelSpec(
        family="gemma3" if gemma else "llama",
        model_type=mt,
        n_layers=n_layers,
        hidden=cfg.hidden_size,
        n_heads=n_heads,
        n_kv_heads=getattr(cfg, "num_key_value_heads", None) or n_heads,
        head_dim=head_dim,
        intermediate=cfg.intermediate_size,
        vocab=cfg.vocab_size,
        rms_eps=float(cfg.rms_norm_eps),
        norm_offset=1.0 if gemma else 0.0,
        embed_scale=math.sqrt(cfg.hidden_size) if gemma else 1.0,
        attn_scale=(cfg.query_pre_attn_scalar if gemma else head_dim) ** -0.5,
        qk_norm=gemma or mt == "qwen3",
        sandwich_norm=gemma,
        activation="gelu_tanh" if gemma else "silu",
        layer_types=layer_types,
        windows=windows,
        rope_thetas=thetas,
        attn_softcap=getattr(cfg, "attn_logit_softcapping", None),
        final_softcap=getattr(cfg, "final_logit_softcapping", None),
        tied_embeddings=bool(getattr(cfg, "tie_word_embeddings", False)),
        bos_id=getattr(cfg, "bos_token_id", None),
        eos_ids=_as_tuple(getattr(cfg, "eos_token_id", None)),
        max_context=getattr(cfg, "max_position_embeddings", 4096),
    )
