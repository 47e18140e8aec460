"""How much memory running the model takes: a calculator, and measurements to check it.

Calculator (bytes), from the architecture alone:

    weights      = parameters x bytes per parameter (dtype; GGUF block formats carry scales)
    KV cache     = sum over layers of 2 x kv_heads x head_dim x slots(l) x batch x 4   (+ int64 positions)
                   slots(l) = tokens (full cache) or min(tokens, window + chunk - 1) (ring, local layers)
    prefill peak = the K/V written + the largest set of activations alive at once
                   (MLP: gate, gelu(gate), up; attention: scores and probs (B, H, T, T))

Measurements come from small fresh processes (lib.concepts.model_memory.probes runs
lib.concepts.model_memory.memory_probe, one at a time, within a memory budget): the runtime,
the tokenizer, the weights in float32 and bfloat16, KV caches per context length, and one
prefill at batch B. `compare_*` pairs each measurement with the calculator.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lib.concepts.kv_quantization.kv_quant import kv_bytes_formula
from lib.core.cache.ring import ring_capacities

ROOT = Path(__file__).resolve().parents[3]
MiB = 1024 ** 2
# bits per weight of common storage formats (GGUF block formats include their scales)
BITS_PER_WEIGHT = {"float32": 32.0, "F32": 32.0, "bfloat16": 16.0, "float16": 16.0, "Q8_0": 34 * 8 / 32,
                   "Q6_K": 6.5625, "Q5_0": 5.5, "Q4_K": 4.5}


def parameter_count(spec) -> int:
    """Parameters of a Gemma 3 / Llama-style decoder with tied or untied embeddings."""
    D, H, K, d, I, V = spec.hidden, spec.n_heads, spec.n_kv_heads, spec.head_dim, spec.intermediate, spec.vocab
    attn = D * H * d + 2 * D * K * d + H * d * D
    mlp = 3 * D * I
    norms = 2 * D + (2 * D if spec.sandwich_norm else 0) + (2 * d if spec.qk_norm else 0)
    embed = V * D * (1 if spec.tied_embeddings else 2)
    return embed + spec.n_layers * (attn + mlp + norms) + D


def weight_bytes(spec, fmt: str) -> float:
    return parameter_count(spec) * BITS_PER_WEIGHT[fmt] / 8


def kv_cache_bytes(spec, tokens: int, batch: int = 1, bytes_per_element: int = 4,
                   windowed: bool = False, chunk: int = 64, positions: bool = True) -> float:
    """Bytes of a KV cache holding `tokens` tokens: the formula per layer, summed over layers,
    with each sliding-window layer capped at its ring size; plus the int64 positions."""
    slots = ring_capacities(spec.windows, tokens, chunk) if windowed else [tokens] * spec.n_layers
    total = 0.0
    for s in slots:
        total += kv_bytes_formula(1, spec.n_kv_heads, spec.head_dim, s, batch, bytes_per_element)
        total += 8 * s * batch if positions else 0
    return total


MATMUL_SCRATCH_PER_ROW = 1920   # bytes per row: oneDNN's buffer in the MLP's down product (1.88 MiB measured for 1,024 rows)


def prefill_activation_bytes(spec, batch: int, tokens: int, bytes_per_element: int = 4,
                             logits: bool = True) -> float:
    """The largest set of activations alive at once in a prefill of T tokens, as
    lib/core/engine.py computes it: the larger of
    - inside a layer, at the end of its MLP: max( MLP: [gate | up] out (2 x B T I), gelu(gate),
      gelu(gate) * up (4 x B T I in all), attention: scaled scores, masked scores, probs
      (3 x B H T T) + bool masks (3 x B T T) ) plus what the layer still holds then: its input,
      the attention's output, the residual, its norm, the MLP's output and the sum (6 x B T D),
      the q/k/v product (B T (H + 2K) d), q and k after RoPE (B T (H + K) d), RoPE's cos and
      sin (2 x B T d), and the math library's buffer for the down product (per row);
    - with `logits`, at the LM head: the residual stream, its norm and the hooks' inputs
      (4 x B T D), q/k/v, plus the last position's logits, twice (2 x B V: the column-blocked
      product and its reordering into one row, lib/core/vocab_matrix.py).
    Measured in a fresh process (the model-memory page's prefill probe, six layers), B x T from
    64 to 1,024: ~78 KB per batch x token; this formula plus those layers' KV cache: 75.7 KB.
    This counts the layer run step by step (the probe runs it so: LLM_LAB_ONE_CALL=0). A server
    runs each layer as two compiled calls (lib/core/one_call.py), which free every intermediate
    at its last use: there the peak is lower (67.5 MB measured where this formula says 77.5)."""
    B, T, e = batch, tokens, bytes_per_element
    H, K, d, D = spec.n_heads, spec.n_kv_heads, spec.head_dim, spec.hidden
    mlp = 4 * B * T * spec.intermediate * e
    attn = 3 * B * H * T * T * e + 3 * B * T * T
    held = B * T * (6 * D + (H + 2 * K) * d + (H + K) * d + 2 * d) * e
    layer = max(mlp, attn) + held + MATMUL_SCRATCH_PER_ROW * B * T
    stream = 4 * B * T * D * e + B * T * (H + 2 * K) * d * e
    return max(layer, stream + 2 * B * spec.vocab * e) if logits else layer


PREFILL_LAYERS = 6   # the prefill probe runs one period of Gemma 3's layout: 5 sliding-window layers + 1 global


def truncated_spec(spec, layers: int):
    """The same model with only its first `layers` layers (the prefill probe's model)."""
    from dataclasses import replace

    return replace(spec, n_layers=layers, layer_types=spec.layer_types[:layers], windows=spec.windows[:layers],
                   rope_thetas=spec.rope_thetas[:layers])


def spec_shape(spec) -> dict:
    """What the kv probe needs to know about the model."""
    return {"n_layers": spec.n_layers, "n_kv_heads": spec.n_kv_heads, "head_dim": spec.head_dim,
            "windows": list(spec.windows)}


@dataclass
class ProbeResult:
    steps: dict[str, dict]      # step name -> the probe's JSON record
    seconds: float


PREFILL_FLOOR = 2 * MiB  # the math library's own scratch buffers are about this size


@dataclass(frozen=True)
class Comparison:
    name: str
    predicted: float
    measured: float

    @property
    def rel_error(self) -> float:
        return abs(self.measured - self.predicted) / max(self.predicted, 1.0)

    def within(self, tol: float = 0.10, floor: float = 0.0) -> bool:
        """|measured - predicted| <= max(tol x predicted, floor)."""
        return abs(self.measured - self.predicted) <= max(tol * self.predicted, floor)


def compare_kv(spec, probe: ProbeResult, batch: int = 1, chunk: int = 64) -> list[Comparison]:
    out = []
    for rec in probe.steps.values():
        if rec["step"].startswith("kv_"):
            pred = kv_cache_bytes(spec, rec["tokens"], batch, windowed=rec["kind"] == "window", chunk=chunk)
            out.append(Comparison(rec["step"], pred, rec["delta"]))
    return out


def compare_weights(spec, probe: ProbeResult) -> list[Comparison]:
    w = probe.steps["weights"]
    return [Comparison("weights_float32", weight_bytes(spec, "float32"), w["float32"]),
            Comparison("weights_bfloat16", weight_bytes(spec, "bfloat16"), w["bfloat16"])]


def compare_prefill(spec, probe: ProbeResult) -> Comparison | None:
    """KV written + activations (no LM head: the probe stops at the final hidden states)."""
    pre = probe.steps["prefill"]
    if pre.get("peak_delta") is None:
        return None
    kv = kv_cache_bytes(truncated_spec(spec, pre.get("layers", spec.n_layers)), pre["tokens"], pre["batch"], positions=True)
    return Comparison("prefill_peak", kv + prefill_activation_bytes(spec, pre["batch"], pre["tokens"], logits=False),
                      pre["peak_delta"])


def gguf_breakdown(path: str) -> dict:
    """File size, and bytes / parameters per tensor type of a GGUF file (read from its index)."""
    import gguf

    from lib.model.gguf_file import GGUFFile

    f = GGUFFile(path)
    by_type: dict[str, dict] = {}
    for info in f.tensors.values():
        name = gguf.GGMLQuantizationType(info.ggml_type).name
        row = by_type.setdefault(name, {"bytes": 0, "params": 0, "tensors": 0})
        row["bytes"] += info.n_bytes
        row["params"] += int(__import__("math").prod(info.shape))
        row["tensors"] += 1
    return {"file_bytes": Path(path).stat().st_size, "by_type": by_type}
