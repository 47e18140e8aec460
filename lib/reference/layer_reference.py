"""One real transformers `Gemma3DecoderLayer` as the reference for the engine's layer.

Built from the model's transformers config (config.json: `query_pre_attn_scalar`,
`rope_parameters`, `sliding_window`, `rms_norm_eps`, ...; never from the app's ModelSpec), its
weights dequantized from the GGUF by `gguf` (lib/reference/gguf_weights.py; never from the
engine's loader or the app's safetensors writer), its RoPE from transformers'
`Gemma3RotaryEmbedding` and its mask from transformers' `create_causal_mask` /
`create_sliding_window_causal_mask` (eager attention). It is fed the engine's own input to
that layer (recorded with a hook) and its output is compared with the engine's output of the
layer, on the same tokens: a wrong attention scale, RoPE base, QK-norm, norm offset, MLP or
window in the engine shows as a difference.

`layer_checks(engine, config, gguf, ids, layers)` -> one LayerCheck per layer; ids (T,) token ids.
`hf_model(config, gguf)` -> the whole transformers `Gemma3ForCausalLM` (eager) the same way:
config from the config dict, every weight from `gguf` (tests/model/test_parity_real.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

_LAYER_TENSORS = {                       # transformers submodule -> llama.cpp tensor kind
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm", "input_layernorm": "attn_norm",
    "post_attention_layernorm": "post_attention_norm", "pre_feedforward_layernorm": "ffn_norm",
    "post_feedforward_layernorm": "post_ffw_norm", "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
}


@dataclass(frozen=True)
class LayerCheck:
    layer: int
    layer_type: str          # the config's "sliding_attention" | "full_attention"
    window: int | None       # the config's sliding window on this layer (None: global)
    tokens: int              # T
    max_diff: float          # max |engine layer output - transformers layer output|
    update: float            # max |transformers output - input|: the size of what the layer adds
    attn_scale: float        # the config's query_pre_attn_scalar ** -0.5
    rope_theta: float        # the config's RoPE base for this layer type

    @property
    def rel(self) -> float:
        """max_diff relative to the layer's update (the residual stream's few huge channels
        would hide a bug in the small ones if divided by the output's own size)."""
        return self.max_diff / self.update if self.update else float("inf")


def text_config(config: dict):
    """A transformers Gemma3TextConfig from the model's config dict, eager attention."""
    from transformers import Gemma3TextConfig

    cfg = Gemma3TextConfig(**{k: v for k, v in config.items() if k not in ("architectures", "transformers_version")})
    cfg._attn_implementation = "eager"
    return cfg


def _hf_layer(gguf, config_items: tuple, layer: int):
    """(Gemma3DecoderLayer with the GGUF's weights, Gemma3RotaryEmbedding, config), built for one
    check and dropped after it (~0.05 s; the checks' results are cached, not the modules: four
    modules kept per process held ~85 MB for the server's whole life)."""
    from transformers.models.gemma3.modeling_gemma3 import Gemma3DecoderLayer, Gemma3RotaryEmbedding

    import json

    cfg = text_config({k: json.loads(v) for k, v in config_items})
    module = Gemma3DecoderLayer(cfg, layer).eval()
    state = {f"{sub}.weight": torch.from_numpy(gguf.hf_tensor(f"blk.{layer}.{kind}.weight"))
             for sub, kind in _LAYER_TENSORS.items()}
    module.load_state_dict(state, strict=True)
    return module, Gemma3RotaryEmbedding(cfg), cfg


def hf_model(config: dict, gguf):
    """transformers' Gemma3ForCausalLM from the config dict, every weight dequantized from the
    GGUF by `gguf` (embedding = tied LM head, final norm, each layer's tensors), eval, float32."""
    from transformers import Gemma3ForCausalLM

    cfg = text_config(config)
    model = Gemma3ForCausalLM(cfg).eval()
    state = {"model.embed_tokens.weight": torch.from_numpy(gguf.tensor("token_embd.weight")),
             "model.norm.weight": torch.from_numpy(gguf.hf_tensor("output_norm.weight"))}
    for layer in range(cfg.num_hidden_layers):
        state |= {f"model.layers.{layer}.{sub}.weight": torch.from_numpy(gguf.hf_tensor(f"blk.{layer}.{kind}.weight"))
                  for sub, kind in _LAYER_TENSORS.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise ValueError(f"GGUF -> transformers: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    return model


def _hashable(config: dict) -> tuple:
    import json

    return tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in config.items()))


def reference_output(config: dict, gguf, x: torch.Tensor, layer: int) -> torch.Tensor:
    """transformers' layer `layer` on input x (1, T, D), positions 0..T-1 -> (1, T, D)."""
    from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask

    items = _hashable(config)
    module, rotary, cfg = _hf_layer(gguf, items, layer)
    T = x.shape[1]
    pos = torch.arange(T)[None]                                               # (1, T)
    layer_type = cfg.layer_types[layer]
    make = create_sliding_window_causal_mask if layer_type == "sliding_attention" else create_causal_mask
    mask = make(config=cfg, inputs_embeds=x, attention_mask=None, cache=None, position_ids=pos)
    if mask is None:                     # transformers may skip an all-causal mask: build it eagerly
        mask = torch.zeros(1, 1, T, T).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), torch.finfo(x.dtype).min)
    with torch.no_grad():
        pe = rotary(x, pos, layer_type=layer_type)
        out = module(x, position_embeddings=pe, attention_mask=mask, position_ids=pos)
    return out[0] if isinstance(out, tuple) else out


class _Enough(Exception):
    """Raised by the recording hook past the last layer it needs: stops the forward early."""


def layer_checks(engine, config: dict, gguf, ids: torch.Tensor, layers) -> tuple[LayerCheck, ...]:
    """One engine forward on ids (T,) recording each listed layer's input and output, then
    the transformers layer on that same input; compare the outputs, one LayerCheck per layer."""
    layers = tuple(int(l) for l in layers)
    seen: dict[tuple[str, int], torch.Tensor] = {}

    def resid_out(l, t):
        if l > max(layers):
            raise _Enough             # the later layers are not needed
        if l in layers:
            seen[("out", l)] = t.detach().float().clone()
        if l + 1 in layers:
            seen[("in", l + 1)] = t.detach().float().clone()

    def embed(l, t):
        if 0 in layers:
            seen[("in", 0)] = t.detach().float().clone()

    ids = ids.reshape(1, -1)
    try:
        engine.forward(ids, engine.new_cache(capacity=ids.shape[1]), hooks={"resid_out": resid_out, "embed": embed},
                       logits="none")
    except _Enough:
        pass
    out = []
    for l in layers:
        x = seen[("in", l)]
        ref = reference_output(config, gguf, x, l)                                 # (1, T, D)
        kind = config["layer_types"][l]
        out.append(LayerCheck(layer=l, layer_type=kind,
                              window=int(config["sliding_window"]) if kind == "sliding_attention" else None,
                              tokens=ids.shape[1], max_diff=float((seen[("out", l)] - ref).abs().max()),
                              update=float((ref - x).abs().max()),
                              attn_scale=float(config["query_pre_attn_scalar"]) ** -0.5,
                              rope_theta=float(config["rope_parameters"][kind]["rope_theta"])))
    return tuple(out)
