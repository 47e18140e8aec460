"""Timed runs of plain and speculative decoding on the engine.

Every wall-clock number comes from lib.core.timing.measure: the run is executed alone (no other
model work in this process meanwhile), `repeats` times, and reported as the median with its
min/max and the machine's load average. Plain decoding is timed once per (prompt, n_new, T) and
passed to every (draft, gamma) cell, so all cells divide by the same baseline.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from lib.decoding.speculative.speculative_decode import PlainRun, SpecRun, plain_decode, speculative_generate
from lib.concepts.speculative_speed import speculative_speed as sp
from lib.core.engine import Engine
from lib.core.timing import Timing, measure
from lib.decoding.sampling import SamplingConfig

REPEATS = 3


@dataclass(frozen=True)
class PlainTiming:
    new_ids: tuple[int, ...]
    target_calls: int
    step_s: float           # one decode step (decode time of the median run / its calls)
    timing: Timing          # the whole run, prefill included


def time_plain(engine: Engine, prompt_ids: tuple, n_new: int, temperature: float = 0.0, seed: int = 0,
               eos_ids: tuple = (), repeats: int = REPEATS) -> PlainTiming:
    """Plain decoding of n_new tokens, timed with `measure` (one warm-up, then `repeats`)."""
    cfg = SamplingConfig(float(temperature))
    runs: list[PlainRun] = []
    tm = measure(lambda: runs.append(plain_decode(engine, prompt_ids, n_new, cfg, seed, eos_ids)), repeats=repeats)
    steps = [r.wall_s / max(r.target_calls, 1) for r in runs[1:]]
    return PlainTiming(tuple(runs[-1].new_ids), runs[-1].target_calls, statistics.median(steps), tm)


@dataclass
class Cell:
    """One (draft, gamma) measurement against plain decoding on the same prompt."""
    draft: str
    gamma: int
    tokens: int                     # tokens the blocks produced (before cutting at n_new)
    proposals: int                  # draft tokens proposed in all blocks
    verified: int                   # proposals verified (up to and including each first rejection)
    target_calls: int
    tokens_per_call: float
    alpha: float                    # mean sum min(p, q) over verified proposals
    accept_rate: float              # accepted / proposed
    expected_tokens: float          # sum over blocks of E[tokens | proposals] (sampled runs)
    expected_sd: float              # its standard deviation
    draft_step_s: float             # mean time of one draft forward (0 for lookup)
    verify_s: float                 # mean time of one verify forward
    plain_step_s: float             # median time of one plain decode step
    spec: Timing                    # the speculative run: median over repeats, min, max, load
    plain: Timing                   # the plain run, the same way
    identical: bool                 # greedy: the same tokens as plain decoding

    @property
    def speedup(self) -> float:
        """Median plain time / median speculative time."""
        return self.plain.median_s / self.spec.median_s

    @property
    def speedup_range(self) -> tuple[float, float]:
        """The speedup the repeats allow at worst and at best (min/max over the repeats)."""
        return self.plain.min_s / self.spec.max_s, self.plain.max_s / self.spec.min_s

    @property
    def cost_ratio(self) -> float:
        return self.draft_step_s / self.plain_step_s

    @property
    def verify_ratio(self) -> float:
        """time of one verify forward / time of one plain decode step."""
        return self.verify_s / self.plain_step_s

    @property
    def mean_block(self) -> float:
        return self.proposals / max(self.target_calls, 1)


def run_gamma(engine: Engine, prompt_ids: tuple, draft_specs: tuple, gamma: int, n_new: int,
              temperature: float, seed: int, vocab_subset: tuple | None, eos_ids: tuple,
              plain: PlainTiming, repeats: int = REPEATS) -> list[Cell]:
    """Every draft at one gamma, each speculative run timed with `measure` (repeats, median)."""
    cfg = SamplingConfig(float(temperature))
    cells = []
    for spec in draft_specs:
        draft = sp.make_draft(engine, spec, vocab_subset)
        runs: list[SpecRun] = []
        tm = measure(lambda: runs.append(speculative_generate(engine, draft, prompt_ids, n_new, gamma, cfg, seed,
                                                              eos_ids)), repeats=repeats, warmup=0)
        cells.append(_cell(draft, runs[-1], gamma, plain, tm))
    return cells


def _cell(draft, run: SpecRun, gamma: int, plain: PlainTiming, tm: Timing) -> Cell:
    stats = [sp.block_expectation(b.accept_prob) for b in run.blocks] or [(0.0, 0.0)]
    emitted = sum(b.emitted for b in run.blocks)
    return Cell(
        draft=draft.name, gamma=gamma, tokens=emitted, proposals=run.proposed,
        verified=sum(len(b.verified_alpha) for b in run.blocks), target_calls=run.target_calls,
        tokens_per_call=emitted / max(run.target_calls, 1), alpha=run.alpha,
        accept_rate=run.accepted / max(run.proposed, 1),
        expected_tokens=float(sum(m for m, _ in stats)), expected_sd=float(np.sqrt(sum(v for _, v in stats))),
        draft_step_s=draft.seconds / draft.forwards if draft.forwards else 0.0,
        verify_s=run.target_s / max(run.target_calls, 1), plain_step_s=plain.step_s,
        spec=tm, plain=plain.timing, identical=tuple(run.new_ids) == plain.new_ids[:len(run.new_ids)])


def pooled(cells: list[Cell]) -> tuple[float, float]:
    """(alpha, c) of one draft over several cells: alpha weighted by verified proposals, c the median."""
    w = [c.verified for c in cells]
    alpha = float(np.average([c.alpha for c in cells], weights=w)) if cells and sum(w) else 0.0
    costs = [c.cost_ratio for c in cells]
    return alpha, float(statistics.median(costs)) if costs else 0.0


def held_out_band(cell: Cell, others: list[Cell], z: float = 3.0) -> tuple[float, float, float, bool]:
    """Leviathan's E[tokens per call] for `cell`, with alpha measured on the OTHER cells of the same
    draft (other gammas): (alpha used, prediction, half-width, held out?). The half-width is z
    standard errors: the spread of tokens per call over this cell's calls plus the uncertainty of
    the held-out alpha. With no other cell the cell's own alpha is used (held out = False)."""
    held = bool(others) and sum(c.verified for c in others) > 0
    alpha = pooled(others)[0] if held else cell.alpha
    n_alpha = sum(c.verified for c in others) if held else max(cell.verified, 1)
    g = cell.mean_block
    pred = sp.expected_tokens_per_call(alpha, g)
    var_k = sp.tokens_per_call_sd(alpha, max(int(round(g)), 0)) ** 2 / max(cell.target_calls, 1)
    var_a = alpha * (1 - alpha) / n_alpha * sp.alpha_sensitivity(alpha, g) ** 2
    return alpha, pred, z * float(np.sqrt(var_k + var_a)) + 1e-9, held


def verdict(cells: list[Cell]) -> tuple[str, Cell]:
    """What the measurements say, chosen from the numbers: ("speculate", best) when the best
    cell's speedup is above 1 even at the worst of its repeats; ("noise", best) when its median
    is above 1 but the repeats reach below 1; ("dont", best) when no cell beats plain decoding."""
    best = max(cells, key=lambda c: c.speedup)
    if best.speedup <= 1.0:
        return "dont", best
    return ("speculate" if best.speedup_range[0] > 1.0 else "noise"), best
