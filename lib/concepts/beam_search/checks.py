"""The beam-search page's live checks.

    parity  : the winner this page shows at (alpha, early_stopping), read off our recorded search
              with `select`, against transformers' own `generate(num_beams=..., length_penalty=...,
              early_stopping=..., do_sample=False)` running on the same engine (beam_search_hf);
    replay  : `select` at 10 other (alpha, early_stopping) settings against transformers'
              `_beam_search` replayed on the logits our search recorded (tests the re-ranking);
    rescore : each winner's recorded Σ log p against a fresh teacher-forced forward pass;
    prob    : the finished sequences' probabilities add up to <= 1 (the score's do not);
    flips   : every winner flip sits where two score lines cross or the stop step changes.

`t(key, **fmt)` is the page's text lookup (tests may pass a stub).
"""
from __future__ import annotations

from lib.concepts.beam_search import beam_rerank
from lib.concepts.beam_search.beam_search import BeamRecord, Selection
from lib.concepts.check_result import CheckResult

PARITY_ALPHAS = (-1.0, 0.0, 0.5, 1.0, 2.0)   # the replay check runs transformers' selection at these alphas ...
PARITY_MODES = (False, True)                 # ... with and without early stopping
SCORE_TOL = 1e-6     # |our score - transformers' sequences_score|: the same float32 operations
RESCORE_TOL = 1e-3   # |Σ log p recorded in the batched search - one teacher-forced forward| (float32 sums)
PROB_SLACK = 1e-9    # Σ e^(Σ log p) may exceed 1 by float rounding only
FLIP_TOL = 2e-3      # |flip alpha found by bisection - crossing alpha from the formula|


def winners_over_alpha(record: BeamRecord, sweep: beam_rerank.AlphaSweep) -> tuple[tuple[int, ...], ...]:
    """The distinct token sequences that win at some alpha of the sweep (to re-score)."""
    return tuple(dict.fromkeys(record.hypotheses[int(w)].tokens for w in sweep.winners))


def page_checks(record: BeamRecord, sel: Selection, theirs: tuple[tuple[int, ...], float], replays,
                sweep: beam_rerank.AlphaSweep, rescored: tuple[float, ...], t) -> list[CheckResult]:
    """`theirs`: generate_beam_search at sel's (alpha, early_stopping); `replays`: Parity list from
    search_with_parity; `rescored`: sequence_logprobs of winners_over_alpha(record, sweep)."""
    ours = record.hypotheses[sel.best]
    d_score = abs(sel.score - theirs[1])
    same_tokens = ours.tokens == theirs[0]
    same = sum(p.same for p in replays)
    winners = winners_over_alpha(record, sweep)
    by_tokens = {h.tokens: h.sum_logprob for h in record.hypotheses}
    worst = max((abs(by_tokens[w] - s) for w, s in zip(winners, rescored)), default=0.0)
    pv = beam_rerank.probability_view(record, sel.alpha)
    reasons = beam_rerank.flip_reasons(sweep, FLIP_TOL)
    flip_ok = all(why != "unexplained" for _, why in reasons)
    flip_detail = "; ".join(t(f"flip_{why}", a=f.alpha, x=f.crossing if f.crossing is not None else float("nan"),
                              s0=f.stops[0] + 1, s1=f.stops[1] + 1) for f, why in reasons)
    es = {False: "False", True: "True"}.get(sel.early_stopping, str(sel.early_stopping))
    return [
        CheckResult(t("check_generate", b=record.num_beams, a=sel.alpha, es=es),
                    same_tokens and d_score <= SCORE_TOL,
                    t("check_generate_detail", same=t("word_same") if same_tokens else t("word_differ"),
                      L=len(ours.tokens), L2=len(theirs[0]), ours=sel.score, theirs=theirs[1], d=d_score,
                      tol=SCORE_TOL), reference=t("ref_generate")),
        CheckResult(t("check_parity", n=len(replays)), same == len(replays),
                    t("check_parity_detail", same=same, n=len(replays)), reference=t("ref_parity")),
        CheckResult(t("check_rescore", k=len(winners)), worst <= RESCORE_TOL,
                    t("check_rescore_detail", d=worst, tol=RESCORE_TOL), reference=t("ref_rescore")),
        CheckResult(t("check_prob"), pv.total_prob <= 1.0 + PROB_SLACK,
                    t("check_prob_detail", n=len(record.hypotheses), P=pv.total_prob, Q=pv.total_exp_score,
                      a=sel.alpha), reference=t("ref_prob")),
        CheckResult(t("check_flips"), flip_ok, t("check_flips_detail", n=len(sweep.flips), detail=flip_detail or "–"), reference=t("ref_flips")),
    ]
