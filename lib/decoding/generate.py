"""Greedy generation on the engine: prefill the prompt once, then one token per forward.

Sampling generation (temperature, top-k, top-p) lives with the sampling pipeline; this is the
reference loop that speed is measured on and that parity with `generate(do_sample=False)`
is checked against.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch

from lib.core.engine import Engine
from lib.core.cache.dense import KVCache


@dataclass
class GreedyRun:
    prompt_ids: list[int]
    new_ids: list[int] = field(default_factory=list)
    step_logits: list[torch.Tensor] = field(default_factory=list)  # (V,) per new token, if kept


def prefill(engine: Engine, ids: torch.Tensor, cache: KVCache | None = None,
            chunk: int | None = None) -> tuple[torch.Tensor, KVCache]:
    """Run the prompt ids (1, T) into a fresh (or given) cache; return last logits (1, V).
    `chunk` splits a long prompt into pieces of that many tokens (same result)."""
    cache = cache if cache is not None else engine.new_cache(ids.shape[0], capacity=ids.shape[1] + 64)
    step = chunk or ids.shape[1]
    for s in range(0, ids.shape[1], step):
        logits = engine.forward(ids[:, s:s + step], cache)
    return logits[:, -1], cache


def greedy_tokens(engine: Engine, prompt_ids: list[int], max_new_tokens: int,
                  eos_ids: tuple[int, ...] = (), keep_logits: bool = False) -> Iterator[tuple[int, torch.Tensor | None]]:
    """Yield (token id, logits or None) one greedy step at a time; stops at EOS."""
    ids = torch.tensor([prompt_ids], device=engine.device)
    logits, cache = prefill(engine, ids)
    for _ in range(max_new_tokens):
        nxt = int(logits[0].argmax())
        yield nxt, (logits[0].float().cpu() if keep_logits else None)
        if nxt in eos_ids:
            return
        logits = engine.forward(torch.tensor([[nxt]], device=engine.device), cache)[:, -1]


def greedy(engine: Engine, prompt_ids: list[int], max_new_tokens: int,
           eos_ids: tuple[int, ...] = (), keep_logits: bool = False,
           on_token: Callable[[int], None] | None = None) -> GreedyRun:
    run = GreedyRun(list(prompt_ids))
    for tok, logits in greedy_tokens(engine, prompt_ids, max_new_tokens, eos_ids, keep_logits):
        run.new_ids.append(tok)
        if logits is not None:
            run.step_logits.append(logits)
        if on_token:
            on_token(tok)
    return run


@dataclass
class StepRecord:
    """One generated token with what the sampling pipeline did at that step."""
    token: int
    prob: float                   # probability of the chosen token in the final distribution
    model_prob: float             # ... and in the model's own distribution (T = 1, no filters)
    rank: int                     # 0 = the model's most likely token
    kept: int                     # tokens left with probability > 0 after all filters
    alternatives: list[tuple[int, float, float]]  # top tokens: (id, model prob, final prob)


def sample_steps(engine: Engine, prompt_ids: list[int], cfg, seed: int, max_new_tokens: int,
                 eos_ids: tuple[int, ...] = (), top_n: int = 5) -> Iterator[StepRecord]:
    """Generate with the sampling pipeline (lib.decoding.sampling), yielding a StepRecord per token.
    The same (prompt, cfg, seed) always gives the same tokens."""
    from lib.decoding.sampling import run_pipeline, sample_next

    gen = torch.Generator().manual_seed(int(seed))
    ids = torch.tensor([prompt_ids], device=engine.device)
    logits, cache = prefill(engine, ids)
    for _ in range(max_new_tokens):
        raw = logits[0].float().cpu()
        res = run_pipeline(raw, cfg)
        tok = sample_next(res.probs, gen)
        model_p = torch.softmax(raw, -1)
        top = torch.topk(model_p, top_n).indices.tolist()
        yield StepRecord(
            token=tok, prob=float(res.probs[tok]), model_prob=float(model_p[tok]),
            rank=int((model_p > model_p[tok]).sum()), kept=res.kept_count,
            alternatives=[(i, float(model_p[i]), float(res.probs[i])) for i in top])
        if tok in eos_ids:
            return
        logits = engine.forward(torch.tensor([[tok]], device=engine.device), cache)[:, -1]


def next_token_logits(engine: Engine, prompt_ids) -> torch.Tensor:
    """The model's logits (V,) for the token after `prompt_ids`, as float32 on the CPU."""
    logits, _ = prefill(engine, torch.tensor([list(prompt_ids)], device=engine.device))
    return logits[0].float().cpu()


def continuation(engine: Engine, prompt_ids, cfg, seed: int, max_new_tokens: int,
                 eos_ids: tuple[int, ...] = ()) -> list[StepRecord]:
    """All StepRecords of one sampled continuation (see sample_steps)."""
    return list(sample_steps(engine, list(prompt_ids), cfg, seed, max_new_tokens, eos_ids))


def argmax_mismatches(engine: Engine, prompt_ids, new_ids) -> int:
    """Teacher-forced check of a greedy path: run prompt + new tokens in one forward and count
    the generated tokens that are NOT the argmax of the logits just before them (0 = greedy)."""
    if not new_ids:
        return 0
    ids = torch.tensor([list(prompt_ids) + list(new_ids)], device=engine.device)
    n, k = len(prompt_ids), len(new_ids)
    logits = engine.forward(ids, engine.new_cache(capacity=ids.shape[1]), logits=slice(n - 1, n - 1 + k))
    return int((logits[0].argmax(-1).cpu() != torch.tensor(list(new_ids))).sum())
