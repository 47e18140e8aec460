"""The activation-outliers page's live checks (no Streamlit).

The quantizer (lib.core.cache.quantized.quantize, used through lib.core.quantization) is
compared with PyTorch's own fake quantization run on scales computed independently in float64
(max|x| / qmax, never the quantizer's own scales), its scales with those float64 scales, and
its rounding error with half the float64 scale; the clipping experiment with a count of the values above the threshold.
"""
from __future__ import annotations

import numpy as np
import torch

from lib.concepts.check_result import CheckResult
from lib.core.quantization import quantize as qz

SCALE_RTOL = 1e-6        # our float32 scale vs max|x| / qmax computed in float64
AGREE_MIN = 0.999        # share of values whose code equals PyTorch's fake quantization
HALF_STEP_TOL = 1.0001   # |x - x_hat| <= scale64 / 2 (float32 rounding of x / scale)


def torch_reference(acts: torch.Tensor, bits: int, scale_t: torch.Tensor, scale_c: torch.Tensor):
    """PyTorch's fake quantization (per tensor, per channel on axis 1) with the given scales,
    symmetric codes in [-qmax, qmax]: what our quantizer should reproduce."""
    q = 2 ** (bits - 1) - 1
    t = torch.fake_quantize_per_tensor_affine(acts.float(), float(scale_t), 0, -q, q)
    c = torch.fake_quantize_per_channel_affine(acts.float(), scale_c.float().flatten(),
                                               torch.zeros(acts.shape[1], dtype=torch.int32), 1, -q, q)
    return t, c


def page_checks(acts: torch.Tensor, bits: int, group: int, sqnr: dict, clip_at: float, clipped: torch.Tensor,
                clip_effect, ppl_ref: float, t) -> list[CheckResult]:
    """acts (T, C): the captured activation; sqnr: {granularity: dB at `bits`}; clipped:
    qz.clip(acts, clip_at); clip_effect: the Effect of injecting it. `t(key, **fmt)` texts."""
    spec_t, spec_c = qz.QuantSpec(bits, "tensor", True, group), qz.QuantSpec(bits, "channel", True, group)
    q_t, q_c = qz.quantize(acts, spec_t), qz.quantize(acts, spec_c)
    a64 = acts.double().numpy()
    qmax = 2 ** (bits - 1) - 1                                                         # symmetric codes
    s_expect = float(np.abs(a64).max() / qmax)
    c_expect = np.abs(a64).max(axis=0) / qmax                                          # (C,)
    s_err = abs(float(q_t.scale.flatten()[0]) - s_expect) / s_expect
    got_c = q_c.scale.double().numpy().flatten()
    if got_c.shape != c_expect.shape:                                                  # not one scale per column
        c_err, agree_c = float("inf"), 0.0
    else:
        c_err = float(np.max(np.abs(got_c - c_expect) / np.maximum(c_expect, 1e-30)))
    ref_t, ref_c = torch_reference(acts, bits, torch.tensor(s_expect),                 # float64 scales
                                   torch.from_numpy(np.where(c_expect > 0, c_expect, 1.0)))
    if got_c.shape == c_expect.shape:
        agree_c = float((ref_c == q_c.dequant).float().mean())
    agree_t = float((ref_t == q_t.dequant).float().mean())
    half = float(((acts.double() - q_t.dequant.double()).abs() / (s_expect / 2)).max())
    n_above = int(np.sum(np.abs(a64) > clip_at))
    n_changed = int((clipped != acts).sum())
    clip_ok = n_changed == n_above and float(clipped.abs().max()) <= clip_at * (1 + 1e-7)
    finer = all(sqnr[g] >= sqnr["tensor"] for g in ("token", "channel", "group"))
    return [
        CheckResult(t("check_scale", bits=bits), s_err <= SCALE_RTOL and c_err <= SCALE_RTOL and
                    min(agree_t, agree_c) >= AGREE_MIN,
                    t("check_scale_detail", s=float(q_t.scale.flatten()[0]), m=float(np.abs(a64).max()), q=qmax,
                      e=s_err, c=c_err, at=100 * agree_t, ac=100 * agree_c, tol=SCALE_RTOL), reference=t("ref_scale64")),
        CheckResult(t("check_finer", bits=bits), finer,
                    t("check_finer_detail", t=sqnr["tensor"], k=sqnr["token"], c=sqnr["channel"], g=sqnr["group"],
                      gs=group), reference=t("ref_finer")),
        CheckResult(t("check_bound"), half <= HALF_STEP_TOL,
                    t("check_bound_detail", r=half, e=float((acts - q_t.dequant).abs().max()),
                      h=s_expect / 2), reference=t("ref_bound64")),
        CheckResult(t("check_clip"), clip_ok,
                    t("check_clip_detail", thr=clip_at, n=n_changed, a=n_above, N=acts.numel(),
                      mx=float(clipped.abs().max()), p0=ppl_ref, p1=clip_effect.ppl_new), reference=t("ref_clip")),
    ]
