"""Re-ranking a finished beam search for any length penalty alpha, without the model.

Each finished hypothesis h has a fixed sum of log-probs S_h <= 0 and length L_h; only its
score changes with alpha:

    score_h(alpha) = S_h / L_h ** alpha

alpha = 0: plain sum (short sequences win: every extra token adds a term <= 0);
alpha = 1: mean log-prob per token; alpha > 1 pushes further toward long sequences;
alpha < 0 punishes length even more than the plain sum.

Two hypotheses' score lines cross where S_1 / L_1^a = S_2 / L_2^a, i.e. at
    a* = ln(S_1 / S_2) / ln(L_1 / L_2)       (L_1 != L_2; both S < 0)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lib.concepts.beam_search.beam_search import BeamRecord, Hypothesis, select


@dataclass(frozen=True)
class Flip:
    """The winner changes between `before` and `after` at alpha ~ `alpha`."""
    alpha: float            # located by bisection on transformers' selection rules
    before: int             # hypothesis index that wins just below alpha
    after: int              # ... and just above
    crossing: float | None  # where their two score lines cross (None: parallel or no crossing)
    stops: tuple[int, int]  # last search step just below and just above alpha


@dataclass
class AlphaSweep:
    alphas: np.ndarray      # (n,)
    winners: np.ndarray     # (n,) index of the returned hypothesis at each alpha
    stop_steps: np.ndarray  # (n,) last step the search runs at each alpha
    scores: np.ndarray      # (H, n) every hypothesis' normalized score at each alpha
    flips: list[Flip]


def crossing_alpha(a: Hypothesis, b: Hypothesis) -> float | None:
    """alpha where a's and b's score lines meet; None if they never do (equal lengths)."""
    if a.length == b.length or a.sum_logprob >= 0 or b.sum_logprob >= 0:
        return None
    return math.log(a.sum_logprob / b.sum_logprob) / math.log(a.length / b.length)


def score_lines(record: BeamRecord, alphas) -> np.ndarray:
    """(H, n): S_h / L_h ** alpha for every hypothesis and alpha (float64, for plotting)."""
    S = np.array([h.sum_logprob for h in record.hypotheses])[:, None]       # (H, 1)
    L = np.array([h.length for h in record.hypotheses], dtype=float)[:, None]  # (H, 1)
    return S / L ** np.asarray(alphas, dtype=float)[None, :]


def _winner(record: BeamRecord, alpha: float, early_stopping) -> int:
    return select(record, alpha, early_stopping).best


def sweep(record: BeamRecord, alphas, early_stopping=False, tol: float = 1e-4) -> AlphaSweep:
    """The returned hypothesis at every alpha of a grid, and each flip refined to `tol`."""
    alphas = np.asarray(alphas, dtype=float)
    sel = [select(record, float(a), early_stopping) for a in alphas]
    winners = np.array([s.best for s in sel])
    flips = []
    for i in np.nonzero(winners[1:] != winners[:-1])[0]:
        lo, hi = float(alphas[i]), float(alphas[i + 1])
        w_lo = int(winners[i])
        while hi - lo > tol:
            mid = (lo + hi) / 2
            if _winner(record, mid, early_stopping) == w_lo:
                lo = mid
            else:
                hi = mid
        below, above = select(record, lo, early_stopping), select(record, hi, early_stopping)
        flips.append(Flip((lo + hi) / 2, w_lo, above.best,
                          crossing_alpha(record.hypotheses[w_lo], record.hypotheses[above.best]),
                          (below.stop_step, above.stop_step)))
    return AlphaSweep(alphas, winners, np.array([s.stop_step for s in sel]),
                      score_lines(record, alphas), flips)


def flip_reasons(sw: AlphaSweep, tol: float = 2e-3) -> list[tuple[Flip, str]]:
    """Why each flip happens: "crossing" (it sits where the two winners' score lines cross,
    within tol), "stop" (the stop rule ends the search at a different step; early_stopping
    False/"never" only) or "unexplained"."""
    out = []
    for f in sw.flips:
        if f.crossing is not None and abs(f.alpha - f.crossing) <= tol:
            out.append((f, "crossing"))
        elif f.stops[0] != f.stops[1]:
            out.append((f, "stop"))
        else:
            out.append((f, "unexplained"))
    return out


def flips_explained(sw: AlphaSweep, tol: float = 2e-3) -> tuple[bool, str]:
    """(every flip explained, a short English account) — see flip_reasons."""
    parts = []
    for f, why in flip_reasons(sw, tol):
        parts.append(f"{f.alpha:.4f} ≈ α* {f.crossing:.4f}" if why == "crossing" else
                     f"{f.alpha:.4f}: stop step {f.stops[0] + 1} → {f.stops[1] + 1}" if why == "stop" else
                     f"{f.alpha:.4f}: unexplained (α* = {f.crossing})")
    return all(why != "unexplained" for _, why in flip_reasons(sw, tol)), "; ".join(parts)


def steps_logprob(steps) -> float:
    """Sum of log p(token) under the model (T = 1, no filters) over generate.StepRecords."""
    return float(sum(math.log(s.model_prob) if s.model_prob > 0 else -math.inf for s in steps))


@dataclass(frozen=True)
class ProbabilityView:
    """Why the normalized score is not a probability."""
    seq_prob: np.ndarray       # (H,) e^S: the model's probability of the token sequence
    exp_score: np.ndarray      # (H,) e^(S / L^alpha): what the score would claim as a 'probability'
    total_prob: float          # sum of e^S over the finished (distinct, prefix-free) hypotheses <= 1
    total_exp_score: float     # sum of e^score: not bounded by 1


def probability_view(record: BeamRecord, alpha: float) -> ProbabilityView:
    S = np.array([h.sum_logprob for h in record.hypotheses], dtype=float)
    L = np.array([h.length for h in record.hypotheses], dtype=float)
    p, q = np.exp(S), np.exp(S / L ** alpha)
    return ProbabilityView(p, q, float(p.sum()), float(q.sum()))


MAX_LINES = 12   # the score-vs-alpha figure draws at most this many hypotheses (12 distinct colours)


def lines_to_draw(sweep: AlphaSweep, cap: int = MAX_LINES) -> list[int]:
    """Hypothesis indices the score-vs-alpha figure draws: ALL of them when there are at most
    `cap` (the page then says "all n"), else the ones that win at some alpha, then the best
    scores, `cap` in all (the page then says "k of the n")."""
    ever = list(dict.fromkeys(int(w) for w in sweep.winners))
    best_at = [int(i) for i in np.argsort(-sweep.scores.max(axis=1), kind="stable")]
    return (ever + [i for i in best_at if i not in ever])[:cap]
