"""The kv-quantization page's live checks (no Streamlit).

Sizes are measured from the storage the quantized cache allocated (packed codes + fp16
scales) and compared with the bytes formula; errors are compared across bit widths, with the
16-bit round trip, keys-only vs values-only, and each entry read back against half a step.
"""
from __future__ import annotations

from lib.concepts.check_result import CheckResult
from lib.concepts.kv_quantization.kv_quant import predicted_bytes
from lib.reference import quant_reference as qref

KL_16_MAX = 1e-5          # next-token KL of the 16-bit round trip (nats)
ATTN_16_MAX = 5e-3        # max |Δ attention weight| of the 16-bit round trip
HALF_STEP_TOL = 1.01      # |read back - original| <= 1.01 x scale64 / 2 (fp16 scale rounded up: <= 1 + 2^-10)
SCALE_TOL = 2.0 ** -9     # |stored fp16 scale - fp16_up(scale64)| / scale64 (0 when the rounding is the same)
AGREE_MIN = 0.999         # share of read-back values equal to PyTorch's fake quantization (ties may differ)


def page_checks(spec, appends, grid, r16, r_k, r_v, gran_names, t) -> list[CheckResult]:
    """grid: {(bits, granularity): (policy, KVRun)} for bits 8, 4, 2 (rows of the page's grid);
    r16, r_k, r_v: KVRun of the 16-bit round trip, keys only and values only; appends: token
    counts appended to the cache (prefix, evaluated); gran_names: {granularity: label}.
    The quantizer checks read each grid run's `quant` (its blocks against PyTorch on float64
    scales); the half-step bound is measured against those float64 scales."""
    bytes_bad = [(p, r.bytes_stored, predicted_bytes(spec, appends, p)) for p, r in grid.values()
                 if r.bytes_stored != predicted_bytes(spec, appends, p)]
    token = {b: grid[(b, "token")] for b in (8, 4, 2)}
    mono = {g: [grid[(b, g)][1].effect.kl_mean for b in (8, 4, 2)] for g in gran_names}
    ok = [g for g, v in mono.items() if v[0] < v[1] < v[2]]
    quant = quantizer_checks({p.label(): r.quant for p, r in grid.values()}, t)
    return quant[:1] + [
        CheckResult(t("check_bytes"), not bytes_bad,
                    t("check_bytes_detail", m8=token[8][1].bytes_stored, m4=token[4][1].bytes_stored,
                      m2=token[2][1].bytes_stored, p8=predicted_bytes(spec, appends, token[8][0]),
                      p4=predicted_bytes(spec, appends, token[4][0]), p2=predicted_bytes(spec, appends, token[2][0]),
                      ok=len(grid) - len(bytes_bad), n=len(grid)), reference=t("ref_bytes")),
        CheckResult(t("check_mono"), len(ok) == len(mono),
                    t("check_mono_detail", ok=len(ok), n=len(mono),
                      vals="; ".join(f"{gran_names[g]}: " + " → ".join(t.num(x, ".2g") for x in v)
                                     for g, v in mono.items())), reference=t("ref_mono")),
        CheckResult(t("check_16"), r16.effect.kl_mean < KL_16_MAX and r16.attn_max < ATTN_16_MAX,
                    t("check_16_detail", kl=r16.effect.kl_mean, a=r16.attn_max, tk=KL_16_MAX, ta=ATTN_16_MAX), reference=t("ref_16")),
        CheckResult(t("check_kv"), r_v.attn_max_layer0 == 0.0 and r_k.attn_max_layer0 > 0,
                    t("check_kv_detail", v=r_v.attn_max_layer0, k=r_k.attn_max_layer0, kl=r_v.effect.kl_mean), reference=t("ref_kv")),
    ] + quant[1:]


def quantizer_checks(quant: dict[str, qref.QuantReport], t) -> list[CheckResult]:
    """[codes and scales vs PyTorch on float64 scales, half-step bound vs the float64 scale]
    over {format: QuantReport} (lib.reference.quant_reference.cache_report of each format)."""
    w = qref.worst(list(quant.values()))
    return [CheckResult(t("check_torchq"), w.scale_err <= SCALE_TOL and w.agree >= AGREE_MIN,
                        t("check_torchq_detail", n=len(quant), g=w.n_groups, e=w.scale_err, tol=SCALE_TOL,
                          a=100 * w.agree, amin=100 * AGREE_MIN), reference=t("ref_torchq")),
            CheckResult(t("check_step"), w.half_step <= HALF_STEP_TOL,
                        t("check_step_detail", w=w.half_step, tol=HALF_STEP_TOL, n=len(quant)),
                        reference=t("ref_step64"))]
