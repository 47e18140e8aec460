"""Generation on the engine's KV cache, one token at a time, with the full sampling-pipeline
record of every step: what each stage kept and how it changed the top alternatives.

This is the loop the decoding pages draw from (the token view's hover, nucleus size per step).
It makes the same draws as `lib.decoding.generate.sample_steps` (same pipeline, same generator use),
so for the same (prompt, config, seed) both give the same tokens; it additionally passes the
context to the pipeline, so multi-token sequence biases work here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import torch

from lib.core.engine import Engine
from lib.decoding.generate import StepRecord, prefill
from lib.decoding.sampling import PipelineResult, SamplingConfig, run_pipeline, sample_next


@dataclass
class StageView:
    """One pipeline stage at one step."""
    name: str                     # "input", "bias", "temperature", "top_k", "top_p", "min_p"
    kept: int                     # tokens with probability > 0 after this stage
    kept_mass: float | None       # filters: mass the kept set had in the stage's input distribution
    alt_probs: tuple[float, ...]  # probability of each of the step's alternatives after this stage


@dataclass
class PipelineStep(StepRecord):
    """A StepRecord (token, prob, model_prob, rank, kept, alternatives) plus every stage."""
    stages: list[StageView] = field(default_factory=list)

    def stage(self, name: str) -> StageView | None:
        return next((s for s in self.stages if s.name == name), None)


def describe_step(raw: torch.Tensor, res: PipelineResult, token: int, top_n: int = 5) -> PipelineStep:
    """The record of one step. Alternatives: the model's top_n, the final distribution's top_n
    and the chosen token, ordered by final probability then model probability."""
    model_p = torch.softmax(raw.float(), dim=-1)                                   # (V,)
    ids = set(torch.topk(model_p, top_n).indices.tolist()) | {int(token)}
    ids |= set(torch.topk(res.probs, min(top_n, res.kept_count)).indices.tolist())
    alt = sorted(ids, key=lambda i: (-float(res.probs[i]), -float(model_p[i])))
    idx = torch.tensor(alt)
    stages, prev = [], model_p
    for rec in res.stages:
        p = torch.softmax(rec.logits, dim=-1)                                     # (V,)
        mass = float(prev[rec.kept].double().sum()) if rec.kept is not None else None
        stages.append(StageView(rec.name, int((p > 0).sum()), mass, tuple(p[idx].tolist())))
        prev = p
    return PipelineStep(
        token=int(token), prob=float(res.probs[token]), model_prob=float(model_p[token]),
        rank=int((model_p > model_p[token]).sum()), kept=res.kept_count,
        alternatives=[(i, float(model_p[i]), float(res.probs[i])) for i in alt], stages=stages)


def stream_with_pipeline(engine: Engine, prompt_ids, cfg: SamplingConfig, seed: int, max_new_tokens: int,
                         eos_ids: tuple[int, ...] = (), top_n: int = 5) -> Iterator[tuple[PipelineStep, PipelineResult]]:
    """Yield (PipelineStep, the step's full PipelineResult: every stage's logits (V,) and kept
    mask, float32 CPU; stage "input" holds the raw logits) per generated token; stops after an
    EOS token. The generator is seeded once, so (prompt, cfg, seed) fixes the output."""
    gen = torch.Generator().manual_seed(int(seed))
    ids = list(prompt_ids)
    cache = engine.new_cache(1, capacity=len(ids) + max_new_tokens + 1)
    logits, cache = prefill(engine, torch.tensor([ids], device=engine.device), cache)
    for _ in range(max_new_tokens):
        raw = logits[0].float().cpu()                                              # (V,)
        res = run_pipeline(raw, cfg, context=tuple(ids))
        tok = sample_next(res.probs, gen)
        yield describe_step(raw, res, tok, top_n), res
        ids.append(tok)
        if tok in eos_ids:
            return
        logits = engine.forward(torch.tensor([[tok]], device=engine.device), cache)[:, -1]


def stream(engine: Engine, prompt_ids, cfg: SamplingConfig, seed: int, max_new_tokens: int,
           eos_ids: tuple[int, ...] = (), top_n: int = 5) -> Iterator[PipelineStep]:
    """Like stream_with_pipeline, without the pipeline's tensors."""
    for step, _ in stream_with_pipeline(engine, prompt_ids, cfg, seed, max_new_tokens, eos_ids, top_n):
        yield step


def continuation(engine: Engine, prompt_ids, cfg: SamplingConfig, seed: int, max_new_tokens: int,
                 eos_ids: tuple[int, ...] = (), top_n: int = 5) -> list[PipelineStep]:
    """All PipelineSteps of one continuation (cache this with runtime.cached)."""
    return list(stream(engine, tuple(prompt_ids), cfg, seed, max_new_tokens, eos_ids, top_n))


def generated_ids(steps) -> list[int]:
    return [s.token for s in steps]
