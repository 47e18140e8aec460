"""The top-k / top-p page's live checks. The filters (lib.decoding.sampling.top_k_mask /
top_p_mask, run inside the sampling pipeline) are compared with transformers' TopKLogitsWarper /
TopPLogitsWarper on the real logits, and the nucleus of every generated step with an exact
float64 recomputation (reaches p; minimal).

    inputs = check_inputs(logits, T, k, p)          # pure, cacheable
    results = page_checks(inputs, trace, effect, t)
"""
from __future__ import annotations

from dataclasses import dataclass

from lib.concepts.check_result import CheckResult
from lib.concepts.top_k_top_p.top_k_top_p import FAST_K, NucleusTrace, OrderEffect
from lib.decoding.sampling import SamplingConfig, apply_temperature, run_pipeline
from lib.reference import draw_test, sampling_reference

CHECK_KS, CHECK_PS = (1, 5, 50, 1000), (0.5, 0.8, 0.9, 0.95, 0.99)   # always compared, plus the page's k, p
REACH_TOL = 1e-6     # the float32 filter may fall short of p by float32 rounding of the cumulative sum
MINIMAL_TOL = 1e-6   # ... and dropping its least likely token must fall below p by more than this


@dataclass(frozen=True)
class CheckInputs:
    vocab: int
    ks: tuple[int, ...]
    ps: tuple[float, ...]
    bad_k: int           # tokens whose kept status differs from TopKLogitsWarper, over ks
    bad_p: int           # ... from TopPLogitsWarper, over ps
    draws: draw_test.Fit  # χ² of sample_next's race against the page's final distribution (T, k, p)


def check_inputs(logits, temperature: float, k: int, p: float) -> CheckInputs:
    scaled = apply_temperature(logits, temperature)                                # what the filters see
    ks = tuple(sorted(set(CHECK_KS + (int(k),))))
    ps = tuple(sorted(set(CHECK_PS + (float(p),))))
    final = run_pipeline(logits, SamplingConfig(temperature, top_k=int(k), top_p=float(p))).probs   # (V,)
    return CheckInputs(int(logits.shape[-1]), ks, ps, sampling_reference.top_k_mismatches(scaled, ks),
                       sampling_reference.top_p_mismatches(scaled, ps), draw_test.sampler_fit(final))


def page_checks(inp: CheckInputs, trace: NucleusTrace, effect: OrderEffect, t) -> list[CheckResult]:
    reach, minimal = float(trace.reach_margin.min()), float(trace.minimal_margin.min())
    d = inp.draws
    fmt = getattr(t, "num", format)            # the page's number writer (a test stub may lack it)
    return [
        CheckResult(t("check_k", V=inp.vocab), inp.bad_k == 0,
                    t("check_k_detail", ks="; ".join(fmt(x, ",") for x in inp.ks), bad=inp.bad_k), t("ref_k")),
        CheckResult(t("check_p"), inp.bad_p == 0,
                    t("check_p_detail", ps="; ".join(fmt(x, "g") for x in inp.ps), bad=inp.bad_p), t("ref_p")),
        CheckResult(t("check_minimal", n=len(trace.steps)), reach >= -REACH_TOL and minimal > -MINIMAL_TOL,
                    t("check_minimal_detail", r=reach, m=minimal, tol=MINIMAL_TOL), t("ref_minimal")),
        CheckResult(t("check_fast", n=len(trace.steps)), int(trace.fast_bad.sum()) == 0,
                    t("check_fast_detail", k=FAST_K, n=len(trace.steps), bad=int(trace.fast_bad.sum())), t("ref_fast")),
        CheckResult(t("check_draws", n=d.n), d.passed,
                    t("check_draws_detail", chi=d.chi2, dof=d.dof, pv=d.p_value, lvl=draw_test.FIT_LEVEL, tv=d.tv,
                      noise=d.tv_noise, top=draw_test.POOL_TOP), t("ref_draws")),
        CheckResult(t("check_order"), bool(effect.t_after.min() == effect.t_after.max()
                                           and effect.t_first.min() < effect.t_first.max()),
                    t("check_order_detail", n=len(effect.temperatures), lo=int(effect.t_first.min()),
                      hi=int(effect.t_first.max()), c=int(effect.t_after[0])), t("ref_order")),
    ]
