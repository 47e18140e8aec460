"""The one decode loop, gpt-fast style: each function builds on the one before it.

    prefill(engine, ids, cache)                 the prompt in one forward -> last logits
    decode_one_token(engine, token, cache)      one new token in one forward -> its logits
    generate(engine, prompt_ids, cfg, seed, max_new_tokens, eos_ids, on_step)
        prefill, then per step: sampling pipeline -> token -> on_step(raw, result, token)
        -> decode_one_token, until max_new_tokens or an end token

Where the logits come from is a `Stepper` (prefill the prompt, then decode one token): the
engine's own dense cache by default (`DenseStepper`); a cache policy (attention-sinks) or the
timed baseline of speculative decoding pass their own stepper and reuse the same loop.

Everything else is a recorder passed as `on_step`: `continuation` keeps a StepRecord per
token (lib/decoding/step_record.py), `greedy` keeps the token ids (and logits if asked).
Greedy is SamplingConfig(temperature=0): the pipeline decides it (lib/decoding/sampling.py).
Randomness comes only from one torch.Generator seeded with `seed`, so (prompt, cfg, seed)
fixes the output.

When several sessions generate at once on one engine, their forwards are batched by the
engine's scheduler (lib/decoding/batching.py): `generate` takes a seat there; alone, the seat
runs the engine directly. Each session gets the same tokens either way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

import torch

from lib.core.engine import Engine
from lib.core.cache.protocol import KVCacheProtocol
from lib.decoding import batching
from lib.decoding.sampling import PipelineResult, SamplingConfig, run_pipeline, sample_next
from lib.decoding.step_record import StepRecord, describe_step, generated_ids  # noqa: F401 (re-exported)

# on_step(raw logits (V,) float32 CPU, the pipeline's result, the chosen token id)
OnStep = Callable[[torch.Tensor, PipelineResult, int], None]


def prefill(engine: Engine, ids: torch.Tensor, cache: KVCacheProtocol | None = None,
            chunk: int | None = None) -> tuple[torch.Tensor, KVCacheProtocol]:
    """Run the prompt ids (B, T) into a fresh (or given) cache; return last logits (B, V).
    `chunk` splits a long prompt into pieces of that many tokens (same result)."""
    cache = cache if cache is not None else engine.new_cache(ids.shape[0], capacity=ids.shape[1] + 64)
    step = chunk or ids.shape[1]
    for s in range(0, ids.shape[1], step):
        logits = engine.forward(ids[:, s:s + step], cache)                # (B, 1, V)
    return logits[:, -1], cache


def decode_one_token(engine: Engine, token: int, cache: KVCacheProtocol) -> torch.Tensor:
    """One new token through the model, appended to `cache`; its logits (1, V)."""
    return engine.forward(torch.tensor([[token]], device=engine.device), cache)[:, -1]


class Stepper(Protocol):
    """Where the decode loop gets its logits: the prompt once, then one token at a time."""

    def prefill(self, ids: list[int]) -> torch.Tensor: ...     # logits (V,) after the prompt
    def decode(self, token: int) -> torch.Tensor: ...          # logits (V,) after one more token


class DenseStepper:
    """The engine with one dense KV cache (the default stepper)."""

    def __init__(self, engine: Engine, capacity: int):
        self.engine, self.cache = engine, engine.new_cache(1, capacity=capacity)

    def prefill(self, ids: list[int]) -> torch.Tensor:
        return prefill(self.engine, torch.tensor([ids], device=self.engine.device), self.cache)[0][0]

    def decode(self, token: int) -> torch.Tensor:
        return decode_one_token(self.engine, token, self.cache)[0]


def choose_token(raw: torch.Tensor, cfg: SamplingConfig, gen: torch.Generator,
                 context=()) -> tuple[PipelineResult, int]:
    """One step's choice: the sampling pipeline on raw logits (V,), then one draw from `gen`
    (T = 0: the argmax, no draw). Every generator's per-token choice is this function."""
    res = run_pipeline(raw, cfg, context=context)
    return res, sample_next(res.probs, gen)


def decode_loop(stepper: Stepper, prompt_ids, cfg: SamplingConfig, seed: int, max_new_tokens: int,
                eos_ids: tuple[int, ...] = (), on_step: OnStep | None = None) -> list[int]:
    """The loop itself: prefill, then sample -> on_step -> decode one token, until
    max_new_tokens or an end token (no forward after the last token). The new ids."""
    gen = torch.Generator().manual_seed(int(seed))
    ids = list(prompt_ids)
    logits = stepper.prefill(ids) if max_new_tokens > 0 else None                  # (V,)
    for i in range(max_new_tokens):
        raw = logits.float().cpu()                                                 # (V,)
        res, token = choose_token(raw, cfg, gen, context=tuple(ids))
        if on_step is not None:
            on_step(raw, res, token)
        ids.append(token)
        if token in eos_ids or i == max_new_tokens - 1:
            break
        logits = stepper.decode(token)
    return ids[len(prompt_ids):]


@batching.joins_batches
def generate(engine: Engine, prompt_ids, cfg: SamplingConfig, seed: int, max_new_tokens: int,
             eos_ids: tuple[int, ...] = (), on_step: OnStep | None = None) -> list[int]:
    """Sample up to max_new_tokens after prompt_ids (stops after an end token); the new ids."""
    with batching.seat(engine) as model:              # the engine, batched with other sessions
        stepper = DenseStepper(model, capacity=len(prompt_ids) + max_new_tokens + 1)
        return decode_loop(stepper, prompt_ids, cfg, seed, max_new_tokens, eos_ids, on_step)


# ---- recorders -----------------------------------------------------------------------------
@batching.joins_batches
def continuation(engine: Engine, prompt_ids, cfg: SamplingConfig, seed: int, max_new_tokens: int,
                 eos_ids: tuple[int, ...] = (), top_n: int = 5) -> list[StepRecord]:
    """A StepRecord per generated token (cache this with runtime.cached)."""
    steps: list[StepRecord] = []
    generate(engine, prompt_ids, cfg, seed, max_new_tokens, eos_ids,
             on_step=lambda raw, res, tok: steps.append(describe_step(raw, res, tok, top_n)))
    return steps


@dataclass
class GreedyRun:
    prompt_ids: list[int]
    new_ids: list[int] = field(default_factory=list)
    step_logits: list[torch.Tensor] = field(default_factory=list)  # (V,) per new token, if kept


@batching.joins_batches
def greedy(engine: Engine, prompt_ids: list[int], max_new_tokens: int,
           eos_ids: tuple[int, ...] = (), keep_logits: bool = False,
           on_token: Callable[[int], None] | None = None) -> GreedyRun:
    """Greedy decoding (temperature 0) through the same loop; optionally each step's logits."""
    run = GreedyRun(list(prompt_ids))

    def record(raw, res, token):
        run.new_ids.append(token)
        if keep_logits:
            run.step_logits.append(raw)
        if on_token:
            on_token(token)

    generate(engine, prompt_ids, SamplingConfig(0.0), 0, max_new_tokens, eos_ids, on_step=record)
    return run


# ---- one-forward helpers -------------------------------------------------------------------
@batching.joins_batches
def next_token_logits(engine: Engine, prompt_ids) -> torch.Tensor:
    """The model's logits (V,) for the token after `prompt_ids`, as float32 on the CPU
    (batched with other sessions' work like `generate`)."""
    with batching.seat(engine) as model:
        logits, _ = prefill(model, torch.tensor([list(prompt_ids)], device=model.device))
    return logits[0].float().cpu()


def argmax_mismatches(engine: Engine, prompt_ids, new_ids) -> int:
    """Teacher-forced check of a greedy path: run prompt + new tokens in one forward and count
    the generated tokens that are NOT the argmax of the logits just before them (0 = greedy)."""
    if not new_ids:
        return 0
    ids = torch.tensor([list(prompt_ids) + list(new_ids)], device=engine.device)
    n, k = len(prompt_ids), len(new_ids)
    logits = engine.forward(ids, engine.new_cache(capacity=ids.shape[1]), logits=slice(n - 1, n - 1 + k))
    return int((logits[0].argmax(-1).cpu() != torch.tensor(list(new_ids))).sum())
