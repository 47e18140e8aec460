"""Speed of speculative decoding: the Leviathan et al. model against measured runs.

With acceptance alpha (i.i.d. per proposal), block length gamma and draft cost c (one draft
step / one target step):

    E[tokens per target call] = (1 - alpha^(gamma+1)) / (1 - alpha)
    expected speedup          = (1 - alpha^(gamma+1)) / ((1 - alpha) (gamma c + 1))

The speedup formula assumes verifying gamma + 1 tokens costs the same as one decode step
(true on a GPU, not on a 2-core CPU): `verify_cost` generalises it with the measured ratio
v(gamma) = time(verify gamma + 1 tokens) / time(one decode step):

    speedup = E[tokens per call] / (gamma c + v(gamma))

Timed runs live in lib.concepts.speculative_speed.timed_runs (lib.core.timing.measure: alone,
repeated, median with its spread and the machine's load).
"""
from __future__ import annotations

import numpy as np

from lib.decoding.speculative.drafts import EngineDraft, PromptLookupDraft
from lib.core.engine import Engine


def expected_tokens_per_call(alpha: float, gamma: int) -> float:
    """(1 - alpha^(gamma+1)) / (1 - alpha); gamma + 1 when alpha = 1."""
    if alpha >= 1.0 - 1e-12:
        return gamma + 1.0
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


def expected_speedup(alpha: float, gamma: int, c: float, verify_cost: float = 1.0) -> float:
    """E[tokens per call] / (gamma c + verify_cost); verify_cost = 1 is Leviathan's formula."""
    return expected_tokens_per_call(alpha, gamma) / (gamma * c + verify_cost)


def tokens_per_call_sd(alpha: float, gamma: int) -> float:
    """Standard deviation of tokens per call when each proposal passes independently with
    probability alpha: K = 1 + (accepted run length capped at gamma)."""
    k = np.arange(1, gamma + 2)
    probs = np.array([alpha ** (i - 1) * (1 - alpha) for i in k[:-1]] + [alpha ** gamma])
    mean = float((k * probs).sum())
    return float(np.sqrt(max((k ** 2 * probs).sum() - mean ** 2, 0.0)))


def block_expectation(accept_probs: list[float]) -> tuple[float, float]:
    """(mean, variance) of the tokens one block emits, given its proposals: proposal i passes
    independently with r_i = min(1, p_i(d_i)/q_i(d_i)) once all before it passed."""
    mean, second, survive = 1.0, 1.0, 1.0
    # K = 1 + sum_i prod_{j<=i} pass_j ; E[K^2] summed over the stopping point
    dist = []
    for r in accept_probs:
        dist.append(survive * (1 - r))      # stops after accepting len(dist) proposals
        survive *= r
    dist.append(survive)                     # all accepted
    ks = np.arange(1, len(dist) + 1)
    d = np.array(dist)
    mean = float((ks * d).sum())
    second = float((ks ** 2 * d).sum())
    return mean, second - mean ** 2


def best_gamma(alpha: float, c: float, gammas, verify_costs=None) -> int:
    """The gamma with the highest expected speedup."""
    vc = verify_costs or [1.0] * len(gammas)
    return int(max(zip(gammas, vc), key=lambda gv: expected_speedup(alpha, gv[0], c, gv[1]))[0])


# ---- drafts by name (hashable specs, so runs can be cached) ---------------------------------
def make_draft(engine: Engine, spec: tuple, vocab_subset=None):
    """("lookup", max_ngram) -> PromptLookupDraft; ("early", k) -> early exit with the full
    head; ("early_small", k) -> early exit with an LM head over `vocab_subset` only."""
    kind = spec[0]
    if kind == "lookup":
        return PromptLookupDraft(engine.spec.vocab, max_ngram=int(spec[1]))
    if kind == "early":
        return EngineDraft(engine, n_layers=int(spec[1]))
    if kind == "early_small":
        return EngineDraft(engine, n_layers=int(spec[1]), vocab_subset=vocab_subset,
                           name=f"early exit k={int(spec[1])}, small head")
    raise ValueError(f"unknown draft {spec!r}")


def alpha_sensitivity(alpha: float, gamma: float, h: float = 1e-4) -> float:
    """d E[tokens per call] / d alpha (central difference, clipped to [0, 1])."""
    lo, hi = max(alpha - h, 0.0), min(alpha + h, 1.0)
    if hi <= lo:
        return 0.0
    return (expected_tokens_per_call(hi, gamma) - expected_tokens_per_call(lo, gamma)) / (hi - lo)


# ---- workloads: text the draft finds easy (it repeats itself) and text it finds hard ---------
EASY_PROMPT = ("def add_one(x):\n    return x + 1\n\n\ndef add_two(x):\n    return x + 2\n\n\n"
               "def add_three(x):\n    return x + 3\n\n\ndef add_four(x):\n    return x + 4\n\n\n")
HARD_PROMPT = "Once upon a time, in a small village by the sea,"
PRESETS = {"easy": EASY_PROMPT, "hard": HARD_PROMPT}
