"""What one decoding step did, for the pages: the chosen token, how likely it was under the
model and after the sampling pipeline, its rank, and what every pipeline stage did to the top
alternatives. `describe_step` is the one place that builds these records; the decode loop
(lib/decoding/generate.py) calls it from its `on_step` recorder.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from lib.decoding.sampling import PipelineResult
from lib.decoding.vocab_max import top_k


@dataclass
class StageView:
    """One pipeline stage at one step."""
    name: str                     # "input", "bias", "temperature", "top_k", "top_p", "min_p"
    kept: int                     # tokens with probability > 0 after this stage
    kept_mass: float | None       # filters: mass the kept set had in the stage's input distribution
    alt_probs: tuple[float, ...]  # probability of each of the step's alternatives after this stage


@dataclass
class StepRecord:
    """One generated token with what the sampling pipeline did at that step."""
    token: int
    prob: float                   # probability of the chosen token in the final distribution
    model_prob: float             # ... and in the model's own distribution (T = 1, no filters)
    rank: int                     # 0 = the model's most likely token
    kept: int                     # tokens left with probability > 0 after all filters
    alternatives: list[tuple[int, float, float]]  # top tokens: (id, model prob, final prob)
    stages: list[StageView] = field(default_factory=list)  # every stage, "input" first

    def stage(self, name: str) -> StageView | None:
        return next((s for s in self.stages if s.name == name), None)


def describe_step(raw: torch.Tensor, res: PipelineResult, token: int, top_n: int = 5) -> StepRecord:
    """The record of one step from its raw logits (V,), the pipeline's result and the chosen
    token. Alternatives: the model's top_n, the final distribution's top_n and the chosen
    token, ordered by final probability then model probability."""
    raw = raw.float()
    model_p = torch.softmax(raw, dim=-1)                                           # (V,)
    ids = set(top_k(model_p, top_n)[1].tolist()) | {int(token)}
    if res.kept_count > 1:                 # else the chosen token is the only one kept (greedy)
        ids |= set(top_k(res.probs, min(top_n, res.kept_count))[1].tolist())
    alt = sorted(ids, key=lambda i: (-float(res.probs[i]), -float(model_p[i])))
    idx = torch.tensor(alt)
    stages, prev, prev_logits, kept = [], model_p, None, 0
    for rec in res.stages:
        final = rec is res.stages[-1] and not res.greedy      # then softmax(rec.logits) is res.probs
        if rec.logits is raw:
            p = model_p                                                          # (V,) the input: done
        elif rec.logits is prev_logits:
            p = prev                       # a stage that changed nothing (T = 0 keeps the logits)
        else:
            p = res.probs if final else torch.softmax(rec.logits, dim=-1)        # (V,)
        mass = float(prev[rec.kept].double().sum()) if rec.kept is not None else None
        if final:
            kept = res.kept_count
        elif p is not prev or prev_logits is None:
            kept = int(torch.count_nonzero(p))                                   # probabilities >= 0
        stages.append(StageView(rec.name, kept, mass, tuple(p[idx].tolist())))
        prev, prev_logits = p, rec.logits
    return StepRecord(
        token=int(token), prob=float(res.probs[token]), model_prob=float(model_p[token]),
        rank=int((model_p > model_p[token]).sum()), kept=res.kept_count,
        alternatives=[(i, float(model_p[i]), float(res.probs[i])) for i in alt], stages=stages)


def generated_ids(steps) -> list[int]:
    return [s.token for s in steps]
