"""The model-memory page's live checks: the calculator (memory_accounting) against things it
did not compute — the GGUF file's own tensor index, a published figure, and memory measured
in fresh processes (probes). A bug in the calculator's bytes per weight, parameter count, KV
formula, sliding-window capacity or activation count turns at least one red
(tests/mutation/test_model_memory.py).

    measured = Measured(gguf_breakdown(...), kv_probe, weights_probe, prefill_probe)   # None: refused
    results = page_checks(spec, measured, t, engine_kv)   # engine_kv: memory_reference.engine_cache_bytes

`t(key, **fmt)` is the page's text lookup (tests may pass a stub that returns the key).
"""
from __future__ import annotations

from dataclasses import dataclass

from lib.concepts.check_result import CheckResult
from lib.concepts.model_memory import memory_accounting as ma

TOL = 0.10            # measured resident memory vs calculator (page granularity, allocator)
WEIGHTS_TOL = 0.02    # the weights are measured a piece at a time: 0.02% off when measured
BPW_TOL = 0.01        # bits per weight: the file's bytes / parameters per tensor type
OLLAMA_MB = 292       # published: Ollama's listing of gemma3:270m (Q8_0)
OLLAMA_TOL = 0.02


@dataclass(frozen=True)
class Measured:
    gguf: dict                          # ma.gguf_breakdown of the bundled file
    kv: ma.ProbeResult | None           # None when the probe was refused (memory budget)
    weights: ma.ProbeResult | None
    prefill: ma.ProbeResult | None


def q8_file_bytes(spec, gguf: dict) -> float:
    """The calculator's Q8_0 file: weights at Q8_0 plus the bundled file's metadata."""
    tensors = sum(v["bytes"] for v in gguf["by_type"].values())
    return ma.weight_bytes(spec, "Q8_0") + gguf["file_bytes"] - tensors


def page_checks(spec, m: Measured, t, engine_kv=None) -> list[CheckResult]:
    """The checks; engine_kv (lib.reference.memory_reference.CacheBytes: the storage a real
    engine cache allocated for a prefill, in this process) adds the calculator's KV bytes
    against it, exactly, available even when the probes are refused."""
    out = []
    bad = [(k, 8 * v["bytes"] / v["params"], ma.BITS_PER_WEIGHT.get(k)) for k, v in sorted(m.gguf["by_type"].items())]
    worst = max(bad, key=lambda r: abs(r[1] - (r[2] if r[2] is not None else -1e9)))
    out.append(CheckResult(t("check_bpw", n=len(bad)),
                           all(c is not None and abs(f - c) <= BPW_TOL for _, f, c in bad),
                           t("check_bpw_detail", kind=worst[0], file=worst[1], calc=worst[2] if worst[2] is not None else float("nan")), reference=t("ref_bpw")))
    q8 = q8_file_bytes(spec, m.gguf)
    out.append(CheckResult(t("check_ollama", ollama=OLLAMA_MB), abs(q8 / 1e6 - OLLAMA_MB) <= OLLAMA_TOL * OLLAMA_MB,
                           t("check_ollama_detail", calc=q8 / 1e6, ollama=OLLAMA_MB, e=abs(q8 / 1e6 - OLLAMA_MB) / OLLAMA_MB), reference=t("ref_ollama")))
    n_params, n_gguf = ma.parameter_count(spec), sum(v["params"] for v in m.gguf["by_type"].values())
    if m.weights is not None:
        w = m.weights.steps["weights"]
        loaded = w["n_params"]
        p32, p16 = ma.weight_bytes(spec, "float32"), ma.weight_bytes(spec, "bfloat16")
        e32, e16 = abs(w["float32"] - p32) / p32, abs(w["bfloat16"] - p16) / p16
        out.append(CheckResult(t("check_weights"), e32 <= WEIGHTS_TOL and e16 <= WEIGHTS_TOL,
                               t("check_weights_detail", p32=p32 / 1e6, m32=w["float32"] / 1e6, e32=e32,
                                 p16=p16 / 1e6, m16=w["bfloat16"] / 1e6, e16=e16), reference=t("ref_weights")))
        out.append(CheckResult(t("check_params"), n_params == n_gguf == loaded,
                               t("check_params_detail", n=n_params, g=n_gguf, e=loaded), reference=t("ref_params")))
    else:
        out.append(CheckResult(t("check_params_file"), n_params == n_gguf, t("check_params_file_detail", n=n_params, g=n_gguf), reference=t("ref_params")))
    if m.kv is not None:
        kv = ma.compare_kv(spec, m.kv)
        worst_kv = max(kv, key=lambda c: c.rel_error)
        _, kind, n_tok = worst_kv.name.split("_")      # the probe's step name: kv_<full|window>_<tokens>
        out.append(CheckResult(t("check_kv", n=len(kv)), all(c.rel_error <= TOL for c in kv),
                               t("check_kv_detail", name=t(f"kv_case_{kind}", n=int(n_tok)), p=worst_kv.predicted / 1e6,
                                 m=worst_kv.measured / 1e6, e=worst_kv.rel_error), reference=t("ref_measured")))
    if engine_kv is not None:
        pred = ma.kv_cache_bytes(spec, engine_kv.tokens)
        out.append(CheckResult(t("check_kv_engine", n=engine_kv.tokens), int(pred) == engine_kv.allocated,
                               t("check_kv_engine_detail", p=pred / 1e6, m=engine_kv.allocated / 1e6,
                                 d=engine_kv.allocated - int(pred)), reference=t("ref_kv_engine")))
    c = ma.compare_prefill(spec, m.prefill) if m.prefill is not None else None
    if c is not None:
        pre = m.prefill.steps["prefill"]
        out.append(CheckResult(t("check_prefill", B=pre["batch"], T=pre["tokens"]), c.within(TOL, ma.PREFILL_FLOOR),
                               t("check_prefill_detail", p=c.predicted / 1e6, m=c.measured / 1e6, e=c.rel_error,
                                 floor=ma.PREFILL_FLOOR / 1e6), reference=t("ref_measured")))
    return out
