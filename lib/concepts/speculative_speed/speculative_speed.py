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

from lib.concepts.speculative.drafts import EngineDraft, PromptLookupDraft
from lib.core.engine import Engine
from lib.decoding.sampling import SamplingConfig
from lib.concepts.speculative.speculative_decode import plain_decode, speculative_generate


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


@dataclass
class Cell:
    """One (draft, gamma) measurement against plain decoding on the same prompt."""
    draft: str
    gamma: int
    tokens: int                     # tokens the blocks produced (before cutting at n_new)
    proposals: int                  # draft tokens proposed in all blocks
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

    @property
    def verify_ratio(self) -> float:
        """time of one verify forward / time of one plain decode step."""
        return self.verify_s / self.plain_step_s

    def formula_band(self, z: float = 3.0) -> tuple[float, float]:
        """(Leviathan's E[tokens per call] with this cell's alpha and its mean block length,
        z standard errors under independent acceptance)."""
        g = self.proposals / max(self.target_calls, 1)
        pred = expected_tokens_per_call(self.alpha, g)
        sd = tokens_per_call_sd(self.alpha, max(int(round(g)), 0))
        return pred, z * sd / np.sqrt(max(self.target_calls, 1)) + 1e-9


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
    cell = _cell_from_run(draft, run, gamma, plain)
    cell.spec_wall_s, cell.plain_wall_s = statistics.median(spec_times), statistics.median(plain_times)
    return cell


# ---- workloads: text the draft finds easy (it repeats itself) and text it finds hard ---------
EASY_PROMPT = ("def add_one(x):\n    return x + 1\n\n\ndef add_two(x):\n    return x + 2\n\n\n"
               "def add_three(x):\n    return x + 3\n\n\ndef add_four(x):\n    return x + 4\n\n\n")
HARD_PROMPT = "Once upon a time, in a small village by the sea,"
PRESETS = {"easy": EASY_PROMPT, "hard": HARD_PROMPT}


def pooled(cells: list[Cell]) -> tuple[float, float]:
    """(alpha, c) of one draft over several cells: alpha weighted by proposals, c the median."""
    weights = [max(c.target_calls, 1) for c in cells]
    alpha = float(np.average([c.alpha for c in cells], weights=weights)) if cells else 0.0
    costs = [c.cost_ratio for c in cells]
    return alpha, float(statistics.median(costs)) if costs else 0.0


def _cell(engine: Engine, prompt_ids, draft, gamma: int, n_new: int, cfg: SamplingConfig, seed: int,
          plain, eos_ids) -> Cell:
    run = speculative_generate(engine, draft, prompt_ids, n_new, gamma, cfg, seed, eos_ids)
    return _cell_from_run(draft, run, gamma, plain)


def run_gamma(engine: Engine, prompt_ids: tuple, draft_specs: tuple, gamma: int, n_new: int,
              temperature: float = 0.0, seed: int = 0, vocab_subset: tuple | None = None,
              eos_ids: tuple = ()) -> list[Cell]:
    """Every draft at one gamma, with ONE plain decode timed in the middle of the drafts' runs
    (side by side: the same load on the machine). Returns one Cell per draft spec."""
    cfg = SamplingConfig(float(temperature))
    drafts = [make_draft(engine, s, vocab_subset) for s in draft_specs]
    half = len(drafts) // 2
    runs = {}
    for i, d in enumerate(drafts[:half]):
        runs[i] = speculative_generate(engine, d, prompt_ids, n_new, gamma, cfg, seed, eos_ids)
    plain = plain_decode(engine, prompt_ids, n_new, cfg, seed, eos_ids)
    cells = []
    for i, d in enumerate(drafts):
        if i < half:  # re-use the run made before the plain decode
            d_run = runs[i]
            cells.append(_cell_from_run(d, d_run, gamma, plain))
        else:
            cells.append(_cell(engine, prompt_ids, d, gamma, n_new, cfg, seed, plain, eos_ids))
    return cells


def _cell_from_run(draft, run, gamma: int, plain) -> Cell:
    stats = [block_expectation(b.accept_prob) for b in run.blocks] or [(0.0, 0.0)]
    emitted = sum(b.emitted for b in run.blocks)
    return Cell(
        draft=draft.name, gamma=gamma, tokens=emitted, proposals=run.proposed, target_calls=run.target_calls,
        tokens_per_call=emitted / max(run.target_calls, 1), alpha=run.alpha,
        accept_rate=run.accepted / max(run.proposed, 1),
        expected_tokens=float(sum(m for m, _ in stats)), expected_sd=float(np.sqrt(sum(v for _, v in stats))),
        draft_step_s=draft.seconds / draft.forwards if draft.forwards else 0.0,
        verify_s=run.target_s / max(run.target_calls, 1),
        plain_step_s=plain.wall_s / max(plain.target_calls, 1),
        spec_wall_s=run.wall_s, plain_wall_s=plain.wall_s,
        identical=run.new_ids == plain.new_ids[:len(run.new_ids)])
