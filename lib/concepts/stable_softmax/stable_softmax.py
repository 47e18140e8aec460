"""Stable softmax: softmax(z) = softmax(z - max z), and only the shifted form is safe.

    softmax(z)_i = exp(z_i) / sum_j exp(z_j)                 naive: exp overflows to inf
                 = exp(z_i - m) / sum_j exp(z_j - m)         m = max z: every exponent <= 0
    logsumexp(z) = m + log sum_j exp(z_j - m)

In exact arithmetic the common factor exp(-m) cancels. In floating point, exp(x) rounds to
inf once exp(x) >= max + ulp(max)/2 of the dtype (x > ~11.09 in float16, ~88.7 in bfloat16 and
float32) and to 0 once exp(x) < smallest subnormal / 2 (x < ~-17.3, ~-92.9, ~-104.0); the
naive form then gives inf/inf = NaN or 0/0 = NaN. The exponentials run in the chosen dtype
and their sum is accumulated in float32, the way fused softmax kernels do it; so a float32
accumulator can overflow too (its sum passes ~3.4e38 once logsumexp(z) > 88.72).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def overflow_threshold(dtype: torch.dtype) -> float:
    """The x above which exp(x) rounds to inf in `dtype`: ln(max + ulp(max) / 2).
    finfo.max = (2 - eps) 2^emax and ulp(max) = eps 2^emax, so the boundary is
    max * (1 + eps / (2 (2 - eps)))."""
    fi = torch.finfo(dtype)
    return math.log(fi.max) + math.log1p(fi.eps / (2 * (2 - fi.eps)))


def underflow_threshold(dtype: torch.dtype) -> float:
    """The x below which exp(x) rounds to 0 in `dtype`: ln(smallest subnormal / 2)."""
    fi = torch.finfo(dtype)
    return math.log(fi.smallest_normal * fi.eps / 2)


def agreement_tolerance(dtype_name: str) -> float:
    """How close two correct softmax implementations in a dtype can be asked to agree:
    one unit of the dtype's precision at 1.0 (eps), but at least 1e-5, because torch's own
    float32 CPU softmax is only that close to the exact (float64) result."""
    return max(torch.finfo(DTYPES[dtype_name]).eps, 1e-5)


def transform(logits: torch.Tensor, scale: float, offset: float, dtype: torch.dtype) -> torch.Tensor:
    """scale * logits + offset, computed in float32 (the logits' dtype) and rounded to `dtype`."""
    return (logits.float() * scale + offset).to(dtype)


def naive_softmax(z: torch.Tensor) -> torch.Tensor:
    """exp(z) / sum exp(z): exp in z's dtype, sum in float32, result rounded to z's dtype."""
    e = torch.exp(z)
    return (e.float() / e.float().sum()).to(z.dtype)


def stable_softmax(z: torch.Tensor) -> torch.Tensor:
    """exp(z - max z) / sum exp(z - max z), same arithmetic as naive_softmax: every exponent
    is <= 0, so no exp overflows, and the largest term is exactly 1, so the sum is >= 1."""
    e = torch.exp(z - z.max())
    return (e.float() / e.float().sum()).to(z.dtype)


def naive_logsumexp(z: torch.Tensor) -> float:
    return float(torch.log(torch.exp(z).float().sum()))


def stable_logsumexp(z: torch.Tensor) -> float:
    m = z.max()
    return float(m.float() + torch.log(torch.exp(z - m).float().sum()))


FLOAT32_OVERFLOW = overflow_threshold(torch.float32)


def naive_status(z: torch.Tensor) -> str:
    """Measured: "ok", "overflow" (an exp or the float32 sum is inf: inf/inf = NaN and
    finite/inf = 0) or "underflow" (every exp is 0: 0/0 = NaN) for the naive softmax of z.
    Exact shortcut: the result is finite and sums to ~1 iff 0 < sum < inf."""
    s = float(torch.exp(z).float().sum())
    return "overflow" if s == float("inf") else "underflow" if s == 0 else "ok"


def predicted_status(z: torch.Tensor) -> str:
    """Predicted from the dtype's limits alone: overflow if some z > overflow_threshold(dtype)
    or logsumexp(z) > the float32 accumulator's threshold; underflow if max z <
    underflow_threshold(dtype); else ok. (max and logsumexp of the stored values, computed
    stably in float32, which holds every fp16/bf16 value exactly.)"""
    z32 = z.float()
    top = float(z32.max())
    if top > overflow_threshold(z.dtype) or float(torch.logsumexp(z32, -1)) > FLOAT32_OVERFLOW:
        return "overflow"
    return "underflow" if top < underflow_threshold(z.dtype) else "ok"


@dataclass
class SoftmaxReport:
    """Naive vs stable softmax of one logit vector in one dtype (all counts over V tokens)."""
    dtype: str
    overflow_at: float          # exp(x) = inf for x above this
    underflow_at: float         # exp(x) = 0 for x below this
    z_max: float                # largest transformed logit (as stored in the dtype)
    z_min: float
    lse64: float                # logsumexp of the stored values, in float64 (the true value)
    exp_inf: int                # measured: tokens whose exp(z) is inf
    exp_inf_predicted: int      # predicted: tokens with z > overflow_at
    exp_zero: int               # measured: tokens whose exp(z) is exactly 0
    exp_zero_predicted: int     # predicted: tokens with z < underflow_at
    naive_status: str           # measured: ok / overflow / underflow (see naive_status)
    predicted_status: str       # from the dtype's limits (see predicted_status)
    naive_nan: int
    naive_inf: int
    naive_sum: float            # sum of the naive result (1 when it works)
    stable_nan: int
    stable_inf: int
    stable_sum: float
    stable_vs_torch: float      # max |stable - torch.softmax| (same dtype, compared in float64)
    stable_vs_exact: float      # max |stable - float64 softmax of the same stored values|
    lse_naive: float
    lse_stable: float
    lse_torch: float


def report(logits: torch.Tensor, scale: float, offset: float, dtype_name: str) -> SoftmaxReport:
    """Transform the real logits, run both softmaxes and log-sum-exps in the dtype, count."""
    dt = DTYPES[dtype_name]
    z = transform(logits, scale, offset, dt)                                       # (V,)
    z64 = z.double()
    e = torch.exp(z)
    naive, stable = naive_softmax(z), stable_softmax(z)
    ref = torch.softmax(z, dim=-1).double()
    exact = torch.softmax(z64, dim=-1)
    hi, lo = overflow_threshold(dt), underflow_threshold(dt)
    return SoftmaxReport(
        dtype_name, hi, lo, float(z64.max()), float(z64.min()), float(torch.logsumexp(z64, -1)),
        int(torch.isinf(e).sum()), int((z64 > hi).sum()),
        int((e == 0).sum()), int((z64 < lo).sum()),
        naive_status(z), predicted_status(z),
        int(torch.isnan(naive).sum()), int(torch.isinf(naive).sum()), float(naive.double().sum()),
        int(torch.isnan(stable).sum()), int(torch.isinf(stable).sum()), float(stable.double().sum()),
        float((stable.double() - ref).abs().max()), float((stable.double() - exact).abs().max()),
        naive_logsumexp(z), stable_logsumexp(z), float(torch.logsumexp(z, dim=-1)))


def safe_window(logits: torch.Tensor, scale: float, dtype_name: str) -> tuple[float, float]:
    """Predicted offsets (lo, hi) between which the naive softmax of scale * logits + c works
    in the dtype: lo = underflow - max, hi = min(overflow - max, overflow_fp32 - logsumexp)."""
    dt = DTYPES[dtype_name]
    z64 = logits.double() * scale
    top, lse = float(z64.max()), float(torch.logsumexp(z64, -1))
    return underflow_threshold(dt) - top, min(overflow_threshold(dt) - top, FLOAT32_OVERFLOW - lse)


def fp32_overflow_points(logits: torch.Tensor, scale: float) -> tuple[float, float]:
    """(c where the float32 sum of exp(s * logits + c) overflows, c where the largest single
    exp does): the sum goes first, by logsumexp - max = -ln(top probability)."""
    z64 = logits.double() * scale
    return FLOAT32_OVERFLOW - float(torch.logsumexp(z64, -1)), overflow_threshold(torch.float32) - float(z64.max())


@dataclass
class OffsetSweep:
    offsets: np.ndarray                      # (n,)
    measured: dict[str, list[str]]           # dtype -> (n,) naive_status at each offset
    predicted: dict[str, list[str]]          # dtype -> (n,) predicted_status at each offset
    stable_ok: dict[str, list[bool]]         # dtype -> (n,) stable_softmax finite and summing to 1 (±1e-2)

    def mismatches(self) -> int:
        return sum(a != b for n in self.measured for a, b in zip(self.measured[n], self.predicted[n]))


def offset_sweep(logits: torch.Tensor, scale: float, offsets, dtype_names=tuple(DTYPES)) -> OffsetSweep:
    """Naive and stable softmax of scale * logits + c for every offset c, in every dtype."""
    offs = np.asarray(sorted(offsets), dtype=float)
    meas, pred, stab = {}, {}, {}
    for name in dtype_names:
        dt = DTYPES[name]
        m, p, ok = [], [], []
        for c in offs:
            z = transform(logits, scale, float(c), dt)                             # (V,)
            m.append(naive_status(z))
            p.append(predicted_status(z))
            total = float(stable_softmax(z).sum(dtype=torch.float64))             # inf or NaN if any term is
            ok.append(math.isfinite(total) and abs(total - 1.0) <= 1e-2)
        meas[name], pred[name], stab[name] = m, p, ok
    return OffsetSweep(offs, meas, pred, stab)


@dataclass
class ShiftReport:
    """stable_softmax of the shifted, stored logits against the exact softmax of the UNshifted ones."""
    delta: float       # max |z as stored - (s * logits + c) exactly|: rounding to the dtype
    max_diff: float    # max_i |stable_i - exact_i|
    excess: float      # max_i (|stable_i - exact_i| - exact_i (e^(2 delta) - 1)): <= eps if only rounding


def shift_report(logits: torch.Tensor, scale: float, offset: float, dtype_name: str) -> ShiftReport:
    """Shift invariance as the implementation sees it: perturbing every logit by at most delta
    moves each p_i by a factor in [e^(-2 delta), e^(2 delta)], so beyond that bound only the
    output rounding (one eps of the dtype) may remain."""
    z = transform(logits, scale, offset, DTYPES[dtype_name])                        # (V,)
    z_exact = logits.double() * scale + offset
    delta = float((z.double() - z_exact).abs().max())
    exact = torch.softmax(logits.double() * scale, dim=-1)                          # no shift at all
    d = (stable_softmax(z).double() - exact).abs()
    return ShiftReport(delta, float(d.max()), float((d - exact * math.expm1(2 * delta)).max()))


def shift_invariance(logits: torch.Tensor, offsets) -> float:
    """max over offsets c of max |softmax(z + c) - softmax(z)|, in float64: the real-arithmetic
    identity the stable form relies on (differences are float64 rounding, ~1e-16)."""
    z = logits.double()
    base = torch.softmax(z, dim=-1)
    return max(float((torch.softmax(z + float(c), dim=-1) - base).abs().max()) for c in offsets)


def histogram(logits: torch.Tensor, scale: float, offset: float, dtype_name: str, bins: int = 120):
    """(bin edges (bins+1,), counts (bins,)) of the transformed logits as stored in the dtype."""
    z = transform(logits, scale, offset, DTYPES[dtype_name]).double().numpy()
    counts, edges = np.histogram(z[np.isfinite(z)], bins=bins)
    return edges, counts


@dataclass
class TopProbs:
    ids: np.ndarray          # (n,) the n largest logits' token ids
    naive: np.ndarray        # (n,) their naive-softmax probabilities (NaN where it broke)
    stable: np.ndarray       # (n,) stable softmax
    reference: np.ndarray    # (n,) torch.softmax in the same dtype


def top_probs(logits: torch.Tensor, scale: float, offset: float, dtype_name: str, n: int = 8) -> TopProbs:
    z = transform(logits, scale, offset, DTYPES[dtype_name])
    ids = torch.topk(logits.float(), n).indices
    pick = lambda p: p[ids].double().numpy()  # noqa: E731
    return TopProbs(ids.numpy(), pick(naive_softmax(z)), pick(stable_softmax(z)), pick(torch.softmax(z, dim=-1)))
