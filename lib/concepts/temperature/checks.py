"""The temperature page's live checks: each compares this project's code with an independent
computation (transformers' warper, torch's own entropy, a forward pass), never with itself.

    inputs = check_inputs(logits, temperatures)          # pure, cacheable
    results = page_checks(inputs, greedy_ids, greedy_bad, t)

`t(key, **fmt)` is the page's text lookup (tests may pass a stub that returns the key).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from lib.concepts.check_result import CheckResult
from lib.concepts.temperature import temperature as tm
from lib.decoding.sampling import SamplingConfig, run_pipeline
from lib.reference import draw_test

PROB_TOL = 1e-6          # |our p - transformers' p|, float32 softmax of the same scaled logits
ENTROPY_REL_TOL = 5e-4   # relative: our entropy (float32 softmax) vs torch.distributions.Categorical
                         # in float64; float32 rounding of 262,144 probabilities measured <= 1.5e-4
MONOTONE_TOL = 1e-9      # bits: allowed decrease between neighbouring temperatures (float64 rounding)
CHECK_TEMPS = (0.05, 0.1, 0.3, 0.5, 0.7, 1.5, 2.0, 5.0, 20.0)   # always checked, plus the page's own
DRAW_T_AT_ZERO = 1.0     # the sampler's χ² runs at the page's T; at T = 0 (one-hot: a draw shows
                         # nothing about the sampler) it runs at this T instead, and says so


@dataclass(frozen=True)
class CheckInputs:
    temperatures: tuple[float, ...]   # the T > 0 that were checked, ascending
    vocab: int
    ranks_same: bool                  # stable argsort of logits / T equals the T = 1 order for every T
    ranks_worst: int                  # positions that differ at worst
    hf_diff: float                    # max |temperature_probs - softmax(TemperatureLogitsWarper)|
    entropy: tuple[float, ...]        # our entropy_bits at each T (bits)
    entropy_ref_diff: float           # max |entropy_bits / (Categorical(logits / T).entropy() / ln 2) - 1|
    greedy_token: int                 # torch.argmax of the logits (independent of our T = 0 path)
    t0_token: int                     # where temperature_probs(logits, 0) put its mass
    t0_mass: float                    # the mass it put there (1 for a one-hot)
    draw_T: float = 1.0               # the temperature the sampler's draws were tested at
    draws: draw_test.Fit | None = None  # χ² of sample_next's race against the final distribution there
    draw_substituted: bool = False    # the page's T was 0, so draw_T is DRAW_T_AT_ZERO instead


def check_inputs(logits: torch.Tensor, temperatures=(), sample_T: float = 0.8) -> CheckInputs:
    """Everything the checks need, computed by the page's lib functions and by references."""
    temps = tuple(sorted(set(CHECK_TEMPS) | {float(x) for x in temperatures if x > 0}))
    same, worst = tm.ranks_identical(logits, temps)
    ent, hf_diff = [], 0.0
    for T in temps:                        # one softmax of ours per T, for the entropy and transformers' diff
        p = tm.temperature_probs(logits, T)                                             # (V,)
        ent.append(tm.entropy_bits(p, tm.temperature_log_probs(logits, T)))
        hf_diff = max(hf_diff, tm.diff_vs_transformers(logits, T, p))
    ref = [float(torch.distributions.Categorical(logits=logits.double() / T).entropy()) / math.log(2)
           for T in temps]
    p0 = tm.temperature_probs(logits, 0.0)                                              # (V,)
    draw_T = float(sample_T) if sample_T > 0 else DRAW_T_AT_ZERO
    final = run_pipeline(logits, SamplingConfig(draw_T)).probs                          # (V,) what the page samples from
    return CheckInputs(temps, int(logits.shape[-1]), same, worst, hf_diff,
                       tuple(ent), float(np.max(np.abs(np.subtract(ent, ref)) / np.maximum(ref, 1e-3))),
                       int(torch.argmax(logits)), int(p0.argmax()), float(p0.max()),
                       draw_T, draw_test.sampler_fit(final), not sample_T > 0)


def page_checks(inp: CheckInputs, greedy_ids, greedy_bad: int, t) -> list[CheckResult]:
    """The five checks the page shows (the last: sample_next's draws at the page's T). `greedy_bad`: generated tokens of the T = 0 path that are
    not the argmax when prompt + path is re-scored in one forward (generate.argmax_mismatches)."""
    steps = np.diff(inp.entropy)
    lo, hi = inp.temperatures[0], inp.temperatures[-1]
    d = inp.draws
    return [
        CheckResult(t("check_rank", V=inp.vocab, n=len(inp.temperatures), lo=lo, hi=hi),
                    inp.ranks_same, t("check_rank_detail", worst=inp.ranks_worst), t("ref_rank")),
        CheckResult(t("check_hf"), inp.hf_diff <= PROB_TOL,
                    t("check_hf_detail", n=len(inp.temperatures), d=inp.hf_diff, tol=PROB_TOL), t("ref_hf")),
        CheckResult(t("check_entropy"),
                    bool(np.all(steps >= -MONOTONE_TOL)) and inp.entropy_ref_diff <= ENTROPY_REL_TOL,
                    t("check_entropy_detail", h0=inp.entropy[0], h1=inp.entropy[-1], lo=lo, hi=hi,
                      n=len(inp.entropy), step=float(steps.min()), d=inp.entropy_ref_diff, tol=ENTROPY_REL_TOL),
                    t("ref_entropy")),
        CheckResult(t("check_greedy"),
                    greedy_bad == 0 and inp.t0_token == inp.greedy_token and inp.t0_mass == 1.0
                    and (not greedy_ids or greedy_ids[0] == inp.greedy_token),
                    t("check_greedy_detail", k=len(greedy_ids), bad=greedy_bad, tok=inp.t0_token,
                      arg=inp.greedy_token, m=inp.t0_mass), t("ref_greedy")),
        CheckResult(t("check_draws", n=d.n, T=inp.draw_T), d.passed,
                    t("check_draws_detail_t0" if inp.draw_substituted else "check_draws_detail", n=d.n,
                      chi=d.chi2, dof=d.dof, pv=d.p_value, lvl=draw_test.FIT_LEVEL, tv=d.tv, noise=d.tv_noise,
                      top=draw_test.POOL_TOP, T=inp.draw_T), t("ref_draws")),
    ]
