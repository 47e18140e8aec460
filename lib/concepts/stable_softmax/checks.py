"""The stable-softmax page's live checks. Each compares the page's code (naive_softmax,
stable_softmax, stable_logsumexp, the thresholds) with something independent: torch.softmax /
torch.logsumexp, torch.exp's own inf and 0, and the exact float64 softmax of the unshifted logits.

    results = page_checks(reports, dtype, sweep, shift, t)
"""
from __future__ import annotations

import torch

from lib.concepts.check_result import CheckResult
from lib.concepts.stable_softmax import stable_softmax as ss

SHIFT_EPS = {name: torch.finfo(dt).eps for name, dt in ss.DTYPES.items()}  # output rounding allowed on top of
                                                                         # the logits' own rounding bound


def page_checks(reports: dict[str, ss.SoftmaxReport], dtype: str, sweep: ss.OffsetSweep, shift: ss.ShiftReport,
                t) -> list[CheckResult]:
    """`reports`: ss.report for every dtype at the page's (s, c); `dtype`: the chosen one;
    `sweep`: ss.offset_sweep; `shift`: ss.shift_report at the page's (s, c, dtype)."""
    r = reports[dtype]
    tol = ss.agreement_tolerance(dtype)
    inf_bad = sum(abs(x.exp_inf - x.exp_inf_predicted) + abs(x.exp_zero - x.exp_zero_predicted)
                  for x in reports.values())
    status_bad = sum(x.naive_status != x.predicted_status for x in reports.values()) + sweep.mismatches()
    n_points = len(sweep.offsets) * len(sweep.measured)
    stable_bad = sum(not ok for v in sweep.stable_ok.values() for ok in v) + sum(
        x.stable_nan + x.stable_inf for x in reports.values())
    lse_tol = tol * max(1.0, abs(r.lse_torch))
    return [
        CheckResult(t("check_torch", d=dtype), r.stable_vs_torch <= tol,
                    t("check_torch_detail", d=r.stable_vs_torch, tol=tol, e=r.stable_vs_exact), reference=t("ref_torch")),
        CheckResult(t("check_inf"), inf_bad == 0,
                    t("check_inf_detail", inf=r.exp_inf, pinf=r.exp_inf_predicted, z=r.exp_zero,
                      pz=r.exp_zero_predicted, d=dtype, bad=inf_bad), reference=t("ref_inf")),
        CheckResult(t("check_status", n=n_points), status_bad == 0, t("check_status_detail", bad=status_bad), reference=t("ref_inf")),
        CheckResult(t("check_stable", n=n_points), stable_bad == 0, t("check_stable_detail", bad=stable_bad), reference=t("ref_stable")),
        CheckResult(t("check_shift", d=dtype), shift.excess <= SHIFT_EPS[dtype],
                    t("check_shift_detail", d=shift.max_diff, delta=shift.delta, x=shift.excess,
                      tol=SHIFT_EPS[dtype]), reference=t("ref_shift")),
        CheckResult(t("check_lse", d=dtype), abs(r.lse_stable - r.lse_torch) <= lse_tol,
                    t("check_lse_detail", a=r.lse_stable, b=r.lse_torch, n=r.lse_naive, tol=lse_tol), reference=t("ref_lse")),
    ]
