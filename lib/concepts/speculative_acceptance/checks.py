"""The speculative-acceptance page's live checks. The Monte Carlo runs the decoder's own
verification (`speculative.accept_or_resample`, the function SpeculativeDecoder.step calls), so
a bug in the rule or the residual that decoding uses turns a check red:

- the exact rule's outputs pass a chi-square test against p (independent: p is the target's
  distribution from the forward pass, not from the rule);
- every rejected trial's replacement lies where p > q (the residual's support);
- the measured acceptance rate matches alpha = sum min(p, q) within 4 standard errors;
- a broken correction is rejected by the same test, and matches the wrong distribution
  predicted for it (the test has power: a check that passed on "not detectable" proved nothing);
- greedy speculative decoding emits exactly the plain greedy tokens (a separate decode loop);
- SpeculativeDecoder.step ITSELF (not just the rule): the first token of 1,000 seeded blocks at
  gamma = 1, and the bonus token of 1,000 at gamma = 0, each a χ² against p (step_fit), at the
  page's T (always > 0 here: its slider starts at 0.1).

`page_checks(inputs, t)` -> list[CheckResult]; t(key, **fmt) is the page's text lookup."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lib.concepts.check_result import CheckResult
from lib.decoding.speculative import acceptance as speculative
from lib.reference.speculative_step_fit import StepFits

FIT_LEVEL = 1e-3         # chi-square: a distribution is rejected when its p-value is below this
RATE_SE = 4.0            # acceptance rate within this many binomial standard errors of alpha
DETECTABLE = 3.0         # a broken rule's exact TV from p must exceed this many noise levels


@dataclass
class AcceptanceInputs:
    p: torch.Tensor                  # (V,) the target's distribution at the position
    q: torch.Tensor                  # (V,) the draft's distribution there
    exact: speculative.MonteCarlo    # trials with the residual correction
    broken: speculative.MonteCarlo   # the same trials with a broken correction
    greedy_spec: list[int]           # greedy speculative decoding's new tokens
    greedy_plain: list[int]          # plain greedy decoding's new tokens
    target_calls: int                # target forwards the speculative run used
    steps: StepFits | None = None    # SpeculativeDecoder.step's first / bonus tokens against p


def page_checks(x: AcceptanceInputs, t) -> list[CheckResult]:
    p, q = x.p, x.q
    n = len(x.exact.outputs)
    alpha = speculative.acceptance_probability(p, q)
    fit = speculative.fit_test(x.exact.outputs, p)
    rejected = x.exact.outputs[~x.exact.accepted]
    outside = rejected_outside_residual(p, q, x.exact.outputs, x.exact.accepted)
    se = (alpha * (1 - alpha) / n) ** 0.5
    rate = x.exact.acceptance_rate
    fit_b = speculative.fit_test(x.broken.outputs, p)
    predicted = speculative.output_distribution(p, q, x.broken.correction).float()
    fit_bp = speculative.fit_test(x.broken.outputs, predicted)
    wrong_tv = speculative.total_variation(predicted, p)
    detectable = wrong_tv > DETECTABLE * fit_b.tv_noise
    same = sum(a == b for a, b in zip(x.greedy_spec, x.greedy_plain))
    return [
        CheckResult(t("check_exact", n=n), fit.p_value > FIT_LEVEL,
                    t("check_exact_detail", chi=fit.chi2, dof=fit.dof, pv=fit.p_value, tv=fit.tv, noise=fit.tv_noise,
                      lvl=FIT_LEVEL), t("ref_exact")),
        CheckResult(t("check_support"), len(rejected) > 0 and outside == 0,
                    t("check_support_detail", r=len(rejected), n=n, bad=outside), t("ref_support")),
        CheckResult(t("check_rate"), abs(rate - alpha) <= RATE_SE * se + 1e-12,
                    t("check_rate_detail", rate=rate, a=alpha, n=n, k=RATE_SE, se=se), t("ref_rate")),
        CheckResult(t("check_broken", v=t(f"wrong_{x.broken.correction}")),
                    detectable and fit_b.p_value <= FIT_LEVEL and fit_bp.p_value > FIT_LEVEL,
                    t("check_broken_detail", pv=fit_b.p_value, pv2=fit_bp.p_value, d=wrong_tv,
                      noise=fit_b.tv_noise, k=DETECTABLE), t("ref_broken")),
        CheckResult(t("check_greedy"), x.greedy_spec == x.greedy_plain,
                    t("check_greedy_detail", same=same, n=len(x.greedy_plain), calls=x.target_calls), t("ref_greedy")),
    ] + ([] if x.steps is None else step_checks(x.steps, t))


def step_checks(s: StepFits, t) -> list[CheckResult]:
    """SpeculativeDecoder.step's own output against p: first tokens (gamma = 1), bonus tokens (gamma = 0)."""
    return [CheckResult(t(f"check_step_{name}", n=f.n), f.p_value > FIT_LEVEL,
                        t("check_step_detail", chi=f.chi2, dof=f.dof, pv=f.p_value, lvl=FIT_LEVEL, tv=f.tv,
                          noise=f.tv_noise, m=s.entries - 1, acc=s.accepted, a=s.alpha), t("ref_step"))
            for name, f in (("first", s.first), ("bonus", s.bonus))]


def rejected_outside_residual(p: torch.Tensor, q: torch.Tensor, outputs: np.ndarray, accepted: np.ndarray) -> int:
    """How many replacement tokens lie where p <= q (the residual is zero there)."""
    rej = torch.as_tensor(outputs[~accepted], dtype=torch.long)
    return int((p.double()[rej] <= q.double()[rej]).sum())
