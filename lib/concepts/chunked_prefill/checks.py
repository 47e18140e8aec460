"""The chunked-prefill page's live checks (no Streamlit).

Each compares with something independent of the code it tests: one-shot prefill (logits and
K/V), the scheduler run for real on the engine and timed (lib.concepts.chunked_prefill.
real_schedule), and the simulation's prediction of that same run.
"""
from __future__ import annotations

import statistics

from lib.concepts.check_result import CONSISTENCY, CheckResult

LOGIT_TOL = 1e-3      # max |chunked - one-shot| logits and K/V (float32, different op order)
BUSY_OTHERS = 0.25    # other programs used more than a quarter of the cores during the run: too busy to judge
NOISY_SPREAD = 0.5    # a step's repeats differ by more than half their median: too noisy to judge
SIM_FACTOR = 2.0      # a prefill step, counted in decode-only steps of the same run: simulated within
                      # [1/2, 2] x measured (2 cores, n 1-8, L 64-512, chunks 16-256: 0.88-1.18)


def sim_vs_real(pred_tokens, pred_s, real) -> tuple[bool, float]:
    """(same prompt tokens in every step, median over the steps that contain prefill of
    predicted / measured step length) up to the end of the prefill. Each step's length is
    counted in decode-only steps of its own run (predicted ones for the prediction, measured
    ones for the measurement): the costs behind the simulation were timed at another moment,
    and a busier machine then or now stretches every step alike, not the ratio."""
    k = len(pred_tokens)
    same = list(pred_tokens) == list(real.prefill_tokens[:k]) and sum(real.prefill_tokens) == sum(pred_tokens)
    pred_dec = [p for p, n in zip(pred_s, pred_tokens) if n == 0]
    real_dec = real.decode_only_s()
    if not pred_dec or not real_dec:
        return same, float("nan")
    pd, rd = statistics.median(pred_dec), statistics.median(real_dec)
    ratios = [(p / pd) / (m / rd) for p, m, n in zip(pred_s, real.step_s, real.prefill_tokens) if n > 0 and m > 0]
    return same, statistics.median(ratios) if ratios else float("nan")


def timing_verdict(held: bool, runs, t, detail: str) -> tuple[bool | None, str]:
    """A timing check's verdict: a pass stands; a failure measured while other programs kept
    the cores busy, or with repeats that disagree, is NOT JUDGED (None) and says why, since on
    a shared machine (Streamlit Cloud, a class's server) correct code can time badly."""
    others = max(r.others_cpu for r in runs)
    spread = max(r.spread for r in runs)
    if held or (others <= BUSY_OTHERS and spread <= NOISY_SPREAD):
        return held, detail
    return None, t("busy_detail", o=100 * others, s=100 * spread, detail=detail)


def page_checks(cc, real_naive, real_chunked, pred_naive, pred_chunked, t) -> list[CheckResult]:
    """cc: chunked_vs_oneshot; real_*: run_schedule without / with chunks; pred_*:
    predicted_steps for the same two schedules. `t(key, **fmt)` gives the texts. The three
    timing checks are judged only on a quiet machine (timing_verdict)."""
    runs = (real_naive, real_chunked)
    pre_naive = max(real_naive.step_s)
    dec = statistics.median(real_naive.decode_only_s() + real_chunked.decode_only_s())
    same_n, r_n = sim_vs_real(*pred_naive, real_naive)
    same_c, r_c = sim_vs_real(*pred_chunked, real_chunked)
    in_band = all(1 / SIM_FACTOR <= r <= SIM_FACTOR for r in (r_n, r_c))
    chunked = real_chunked.chunk is not None and real_chunked.chunk < sum(real_chunked.prefill_tokens)
    same_out = (real_naive.running_tokens == real_chunked.running_tokens[:len(real_naive.running_tokens)]
                if len(real_naive.running_tokens) <= len(real_chunked.running_tokens)
                else real_naive.running_tokens[:len(real_chunked.running_tokens)] == real_chunked.running_tokens)
    same_out = same_out and real_naive.first_token == real_chunked.first_token
    return [
        CheckResult(t("check_logits"), cc.max_abs_diff <= LOGIT_TOL and cc.cache_diff <= LOGIT_TOL and cc.argmax_equal,
                    t("check_logits_detail", n=cc.n_tokens, c=cc.chunk, k=cc.n_chunks, d=cc.max_abs_diff,
                      kv=cc.cache_diff, tol=LOGIT_TOL), reference=t("ref_logits"), kind=CONSISTENCY),
        CheckResult(t("check_ratio"), *timing_verdict(
                    pre_naive > dec, runs, t,
                    t("check_ratio_detail", pl=pre_naive * 1000, d=dec * 1000, x=pre_naive / dec)), reference=t("ref_ratio")),
        CheckResult(t("check_bound", c=real_chunked.chunk or 0), *timing_verdict(
                    (max(real_chunked.step_s) < pre_naive) if chunked else True, runs, t,
                    t("check_bound_detail", mc=max(real_chunked.step_s) * 1000, mn=pre_naive * 1000,
                      n=len(real_chunked.step_s), load=real_chunked.load_avg) if chunked else t("check_bound_none")),
                    reference=t("ref_bound")),
        CheckResult(t("check_sim"), *timing_verdict(
                    same_n and same_c and in_band, runs, t,
                    t("check_sim_detail", rn=r_n, rc=r_c, f=SIM_FACTOR, kn=len(pred_naive[0]), kc=len(pred_chunked[0]),
                      same=t("yes") if same_n and same_c else t("no"))), reference=t("ref_sim")),
        CheckResult(t("check_outputs"), same_out,
                    t("check_outputs_detail", k=len(real_naive.running_tokens[0]) if real_naive.running_tokens else 0,
                      s=min(len(real_naive.running_tokens), len(real_chunked.running_tokens)),
                      same=t("yes") if same_out else t("no")), reference=t("ref_outputs"), kind=CONSISTENCY),
    ]
