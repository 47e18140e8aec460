"""How much memory running the model takes: a calculator, and measurements to check it.

Calculator (bytes), from the architecture alone:

    weights      = parameters x bytes per parameter (dtype; GGUF block formats carry scales)
    KV cache     = sum over layers of 2 x kv_heads x head_dim x slots(l) x batch x 4   (+ int64 positions)
                   slots(l) = tokens (full cache) or min(tokens, window + chunk - 1) (ring, local layers)
    prefill peak = the K/V written + the largest set of activations alive at once
                   (MLP: gate, gelu(gate), up; attention: scores and probs (B, H, T, T))

Measurements come from fresh processes (lib.concepts.model_memory.memory_probe): the runtime, the tokenizer, the
weights in float32 and bfloat16, KV caches per context length, and one prefill at batch B.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lib.concepts.kv_quantization.kv_quant import kv_bytes_formula
from lib.core.cache.ring import ring_capacities

ROOT = Path(__file__).resolve().parents[3]
MiB = 1024 ** 2
# bits per weight of common storage formats (GGUF block formats include their scales)
BITS_PER_WEIGHT = {"float32": 32.0, "bfloat16": 16.0, "float16": 16.0, "Q8_0": 34 * 8 / 32,
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


def prefill_activation_bytes(spec, batch: int, tokens: int, bytes_per_element: int = 4) -> float:
    """The largest set of activations alive at once in one layer of a prefill of T tokens, as
    lib/core/engine.py computes it:
    max( MLP: [gate | up] out (2 x B T I), gelu(gate), gelu(gate) * up (4 x B T I in all),
         attention: scaled scores, masked scores, probs (3 x B H T T) + bool masks (3 x B T T) )
    plus the residual stream, its norm and the hooks' inputs (4 x B T D), q/k/v (B T (H + 2K) d)
    and the logits of the last position, twice (2 x B V: the column-blocked LM head's product
    and its reordering into one row, lib/core/vocab_matrix.py)."""
    B, T, e = batch, tokens, bytes_per_element
    mlp = 4 * B * T * spec.intermediate * e
    attn = 3 * B * spec.n_heads * T * T * e + 3 * B * T * T
    stream = 4 * B * T * spec.hidden * e + B * T * (spec.n_heads + 2 * spec.n_kv_heads) * spec.head_dim * e
    return max(mlp, attn) + stream + 2 * B * spec.vocab * e


def spec_shape(spec) -> dict:
    """What the kv probe needs to know about the model."""
    return {"n_layers": spec.n_layers, "n_kv_heads": spec.n_kv_heads, "head_dim": spec.head_dim,
            "windows": list(spec.windows)}


@dataclass
class ProbeResult:
    steps: dict[str, dict]      # step name -> the probe's JSON record
    seconds: float


def run_probe(args: dict, on_step: Callable[[str], None] | None = None, timeout: float = 900) -> ProbeResult:
    """Run lib.concepts.model_memory.memory_probe in a fresh Python with `args`; collect its JSON lines.
    glibc's mmap threshold is pinned so every large tensor is its own mapping and goes back
    to the OS when freed: deltas then show the step, not the allocator's leftovers."""
    import time

    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_ARENA_MAX="2", PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "lib.concepts.model_memory.memory_probe", json.dumps(args)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    steps = {}
    try:
        for line in proc.stdout:
            if line.startswith("{"):
                rec = json.loads(line)
                steps[rec["step"]] = rec
                if on_step:
                    on_step(rec["step"])
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    if proc.returncode != 0:
        raise RuntimeError(f"memory probe failed ({proc.returncode}): {proc.stderr.read()[-500:]}")
    return ProbeResult(steps, time.perf_counter() - t0)


def measure_kv(spec, contexts: tuple[int, ...], batch: int = 1, chunk: int = 64,
               _progress: Callable[[float], None] | None = None) -> ProbeResult:
    """Measured RSS growth of full and sliding-window KV caches at each context length."""
    n = 2 * len(contexts) + 1
    done = []
    step = (lambda s: (done.append(s), _progress(len(done) / n))) if _progress else None  # noqa: E731
    return run_probe({"mode": "kv", "contexts": list(contexts), "batch": batch, "chunk": chunk,
                      "spec": spec_shape(spec)}, step)


def measure_model(batch: int, prefill: int, device: str = "cpu",
                  _progress: Callable[[float], None] | None = None) -> ProbeResult:
    """Measured memory of the runtime, tokenizer, weights (fp32, bf16) and one prefill."""
    names = ("runtime", "tokenizer", "hf_model_object", "weights_float32", "weights_bfloat16", "prefill")
    step = (lambda s: _progress((names.index(s) + 1) / len(names)) if s in names else None) if _progress else None
    return run_probe({"mode": "model", "batch": batch, "prefill": prefill, "device": device}, step)


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


def compare_model(spec, probe: ProbeResult) -> list[Comparison]:
    s = probe.steps
    pre = s["prefill"]
    out = [Comparison("weights_float32", weight_bytes(spec, "float32"), s["weights_float32"]["delta"]),
           Comparison("weights_bfloat16", weight_bytes(spec, "bfloat16"), s["weights_bfloat16"]["delta"])]
    if pre.get("peak_delta") is not None:
        kv = kv_cache_bytes(spec, pre["tokens"], pre["batch"], positions=True)
        out.append(Comparison("prefill_peak", kv + prefill_activation_bytes(spec, pre["batch"], pre["tokens"]),
                              pre["peak_delta"]))
    return out


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
