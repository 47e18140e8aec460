"""The logit-bias page's live checks. Each compares the sampling pipeline's real output
(lib.decoding.sampling.apply_bias inside run_pipeline) with something independent: the odds
formula e^(b/T) or e^b, transformers' SequenceBiasLogitsProcessor and processor chain, and the
generated tokens themselves.

    inputs = check_inputs(logits, entries, b, T, top_p, mode, target, prompt_ids, biased_ids)
    results = page_checks(inputs, target_text, t)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lib.concepts.check_result import CheckResult
from lib.concepts.logit_bias import logit_bias as lb
from lib.decoding.sampling import EmptyDistribution, SamplingConfig
from lib.reference import sampling_reference

CHAIN_TOL = 1e-6     # max |Δp| between our pipeline and transformers' chained processors (float32)
HF_TOL = 0.0         # biased logits: adding b in float32 is exact arithmetic on both sides


@dataclass(frozen=True)
class CheckInputs:
    b: float
    temperature: float
    top_p: float
    odds_bias_first: lb.OddsReport
    odds_temp_first: lb.OddsReport
    tol: float                 # odds_tolerance (float32 rounding of the scaled logits)
    n_single: int              # single-token spellings compared with SequenceBias
    n_entries: int
    hf_single: float
    hf_all: float
    chain: float | None        # None: no single-token bias to chain
    n_generated: int
    banned: int                # banned ids / sequences
    hits: int                  # banned sequences completed by a generated token
    odds_ban: lb.OddsReport | None = None   # b = -inf on the same logits when b is finite (item 4: the
                                            # default b = -3 alone cannot show a bug in how a ban is applied)


def check_inputs(logits: torch.Tensor, entries, b: float, temperature: float, top_p: float, mode: str,
                 target: int, prompt_ids, biased_ids) -> CheckInputs:
    bias, seq_bias = lb.bias_settings(list(entries), b, mode)
    single = tuple((e.ids, b) for e in entries if len(e.ids) == 1)
    hf_single = sampling_reference.sequence_bias_max_diff(logits, single or (((target,), b),), prompt_ids)
    hf_all = sampling_reference.sequence_bias_max_diff(logits, tuple((e.ids, b) for e in entries), prompt_ids)
    chain = (sampling_reference.pipeline_max_diff(logits, SamplingConfig(temperature, top_p=top_p, bias=bias))
             if bias else None)
    banned = [(tok,) for tok, _ in bias] + [s for s, _ in seq_bias]
    return CheckInputs(
        b, temperature, top_p,
        lb.odds_report(logits, target, b, temperature, lb.BIAS_FIRST),
        lb.odds_report(logits, target, b, temperature, lb.TEMPERATURE_FIRST),
        lb.odds_tolerance(logits, b, temperature), len(single), len(entries), hf_single, hf_all, chain,
        len(biased_ids), len(banned), lb.completed_sequences(prompt_ids, biased_ids, banned),
        None if b == -math.inf else ban_probe(logits, target, temperature))


def ban_probe(logits: torch.Tensor, target: int, temperature: float) -> lb.OddsReport:
    """odds_report of b = -inf on `target`; a pipeline that empties the whole distribution
    (every probability NaN or 0) reports NaN odds and p_after, which the check reads as failed."""
    try:
        return lb.odds_report(logits, target, -math.inf, temperature, lb.BIAS_FIRST)
    except EmptyDistribution:
        nan = float("nan")
        p0 = float(torch.softmax(logits.double() / temperature, -1)[target])
        return lb.OddsReport(int(target), -math.inf, 0.0, nan, nan, nan, p0, nan, 0)


def page_checks(inp: CheckInputs, target_text: str, t) -> list[CheckResult]:
    r, r2, tol = inp.odds_bias_first, inp.odds_temp_first, inp.tol
    ban = inp.b == -math.inf
    if ban:
        odds = CheckResult(t("check_odds_ban", tok=target_text), r.target_err == 0 and r.p_after == 0,
                           t("check_odds_ban_detail", p0=r.p_before, p1=r.p_after, n=r.n_pairs, m=r.target_err), reference=t("ref_odds"))
    else:
        odds = CheckResult(t("check_odds", tok=target_text), r.target_err <= tol,
                           t("check_odds_detail", m=r.measured, pred=r.predicted, e=r.effective, n=r.n_pairs,
                             err=r.target_err, tol=tol), reference=t("ref_odds"))
    checks = [
        odds,
        CheckResult(t("check_others", n=r.n_pairs), r.others_err <= tol,
                    t("check_others_detail", err=r.others_err, tol=tol), reference=t("ref_odds")),
    ]
    if not ban:
        checks.append(CheckResult(t("check_order_t"), r2.target_err <= tol and r.target_err <= tol,
                                  t("check_order_t_detail", T=inp.temperature, a=r.effective, b=r2.effective,
                                    ma=math.log(r.measured), mb=math.log(r2.measured), tol=tol), reference=t("ref_odds")))
    checks.append(CheckResult(t("check_hf"), inp.hf_single <= HF_TOL and inp.hf_all <= HF_TOL,
                              t("check_hf_detail", n=inp.n_single, d=inp.hf_single, m=inp.n_entries, d2=inp.hf_all), reference=t("ref_hf")))
    if inp.chain is not None:
        checks.append(CheckResult(t("check_chain"), inp.chain <= CHAIN_TOL,
                                  t("check_chain_detail", d=inp.chain, T=inp.temperature, p=inp.top_p, tol=CHAIN_TOL), reference=t("ref_chain")))
    if ban:
        checks.append(CheckResult(t("check_ban", n=inp.n_generated), inp.hits == 0,
                                  t("check_ban_detail", k=inp.banned, hits=inp.hits), reference=t("ref_ban")))
    elif inp.odds_ban is not None:      # no ban set: the ban itself is still checked, on the same logits
        z = inp.odds_ban
        checks.append(CheckResult(t("check_odds_ban", tok=target_text), z.target_err == 0 and z.p_after == 0,
                                  t("check_ban_off_detail", p0=z.p_before, p1=z.p_after, n=z.n_pairs, m=z.target_err),
                                  reference=t("ref_odds")))
    return checks
