"""Speed of speculative decoding: the Leviathan et al. model against measured runs.

With acceptance alpha (i.i.d. per proposal), block length gamma and draft cost c (one draft
step / one target step):

    E[tokens per target call] = (1 - alpha^(gamma+1)) / (1 - alpha)
    expected speedup          = (1 - alpha^(gamma+1)) / ((1 - alpha) (gamma c + 1))

The speedup formula assumes verifying gamma + 1 tokens costs the same as one decode step
(true on a GPU, not on a 2-core CPU): `verify_cost` generalises it with the measured ratio
v(gamma) = time(verify gamma + 1 tokens) / time(one decode step):

    speedup = E[tokens per call] / (gamma c + v(gamma))

Measured runs (`run_cell`) time a plain decode and a speculative decode side by side, in the
same process and the same order, and report medians.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from lib.drafts import EngineDraft, PromptLookupDraft
from lib.engine import Engine
from lib.sampling import SamplingConfig
from lib.speculative_decode import plain_decode, speculative_generate


def expected_tokens_per_call(alpha: float, gamma: int) -> float:
    """(1 - alpha^(gamma+1)) / (1 - alpha); gamma + 1 when alpha = 1."""
    if alpha >= 1.0:
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


@dataclass
class Cell:
    """One (draft, gamma) measurement against plain decoding on the same prompt."""
    draft: str
    gamma: int
    tokens: int
    target_calls: int
    tokens_per_call: float
    alpha: float                    # mean sum min(p, q) over verified proposals
    accept_rate: float              # accepted / proposed
    expected_tokens: float          # sum over blocks of E[tokens | proposals] (exact check)
    expected_sd: float              # its standard deviation
    draft_step_s: float             # median-free mean time of one draft forward (0 for lookup)
    verify_s: float                 # mean time of one verify forward
    plain_step_s: float             # mean time of one plain decode step (side by side)
    spec_wall_s: float              # median over repeats
    plain_wall_s: float             # median over repeats
    identical: bool                 # greedy: the same tokens as plain decoding

    @property
    def speedup(self) -> float:
        return self.plain_wall_s / self.spec_wall_s

    @property
    def cost_ratio(self) -> float:
        return self.draft_step_s / self.plain_step_s


def run_cell(engine: Engine, prompt_ids: tuple, draft_spec: tuple, gamma: int, n_new: int,
             temperature: float = 0.0, seed: int = 0, repeats: int = 1,
             vocab_subset: tuple | None = None, eos_ids: tuple = ()) -> Cell:
    """Plain decode and speculative decode of n_new tokens, alternated `repeats` times."""
    cfg = SamplingConfig(float(temperature))
    draft = make_draft(engine, draft_spec, vocab_subset)
    spec_times, plain_times = [], []
    run = plain = None
    for _ in range(max(1, repeats)):
        plain = plain_decode(engine, prompt_ids, n_new, cfg, seed, eos_ids)
        plain_times.append(plain.wall_s)
        run = speculative_generate(engine, draft, prompt_ids, n_new, gamma, cfg, seed, eos_ids)
        spec_times.append(run.wall_s)
    means, variances = zip(*(block_expectation(b.accept_prob) for b in run.blocks)) if run.blocks else ((0.0,), (0.0,))
    # the last block may have been cut at n_new; its expectation is capped the same way
    exp_tokens = float(sum(means))
    draft_forwards = max(draft.forwards, 1)
    return Cell(
        draft=draft.name, gamma=gamma, tokens=len(run.new_ids), target_calls=run.target_calls,
        tokens_per_call=run.tokens_per_call, alpha=run.alpha,
        accept_rate=run.accepted / max(run.proposed, 1), expected_tokens=exp_tokens,
        expected_sd=float(np.sqrt(sum(variances))),
        draft_step_s=draft.seconds / draft_forwards if draft.forwards else 0.0,
        verify_s=run.target_s / max(run.target_calls, 1),
        plain_step_s=plain.wall_s / max(plain.target_calls, 1),
        spec_wall_s=statistics.median(spec_times), plain_wall_s=statistics.median(plain_times),
        identical=run.new_ids == plain.new_ids)
