"""The one decode loop, gpt-fast style: each function builds on the one before it.

    prefill(engine, ids, cache)                 the prompt in one forward -> last logits
    decode_one_token(engine, token, cache)      one new token in one forward -> its logits
    generate(engine, prompt_ids, cfg, seed, max_new_tokens, eos_ids, on_step)
        prefill, then per step: sampling pipeline -> token -> on_step(raw, result, token)
        -> decode_one_token, until max_new_tokens or an end token

Where the logits come from is a `Stepper` (prefill the prompt, then decode one token): the
engine's own dense cache by default (`DenseStepper`, which reuses a prompt prefilled recently on
the same engine: `PromptCache`); a cache policy (attention-sinks) or the timed baseline of
speculative decoding pass their own stepper and reuse the same loop.

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

import os
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Protocol

import torch

from lib.core import threads
from lib.core.engine import Engine
from lib.core.cache.dense import KVCache
from lib.core.cache.protocol import KVCacheProtocol
from lib.decoding import batching
from lib.decoding.sampling import PipelineResult, SamplingConfig, run_pipeline, sample_next
from lib.decoding.step_record import StepRecord, describe_step, generated_ids  # noqa: F401 (re-exported)

# on_step(raw logits (V,) float32 CPU, the pipeline's result, the chosen token id)
OnStep = Callable[[torch.Tensor, PipelineResult, int], None]


def prefill(engine: Engine, ids: torch.Tensor, cache: KVCacheProtocol | None = None,
            chunk: int | None = None, positions: torch.Tensor | None = None, head: bool = True
            ) -> tuple[torch.Tensor | None, KVCacheProtocol]:
    """Run the prompt ids (B, T) into a fresh (or given) cache; return last logits (B, V).
    `chunk` splits a long prompt into pieces of that many tokens (same result). `positions`
    (B, T): where each token sits (default: continue from the cache's next position); a
    cache that stores rows of different lengths (paged, padded) passes its own.
    `head=False`: only the cache is wanted (no LM head; the logits returned are None)."""
    cache = cache if cache is not None else engine.new_cache(ids.shape[0], capacity=ids.shape[1] + 64)
    step = chunk or ids.shape[1]
    for s in range(0, ids.shape[1], step):
        at = {} if positions is None else {"positions": positions[:, s:s + step]}  # a Seat takes none
        if not head:
            at["logits"] = "none"
        logits = engine.forward(ids[:, s:s + step], cache, **at)          # (B, 1, V)
    return (logits[:, -1] if head else None), cache


def decode_one_token(engine: Engine, token: int | torch.Tensor, cache: KVCacheProtocol,
                     positions: torch.Tensor | None = None) -> torch.Tensor:
    """One new token per row through the model, appended to `cache`; its logits (B, V).
    `token`: an id (B = 1) or a LongTensor (B, 1) on the engine's device (a batch of
    sequences, or a CUDA graph's static input). `positions` (B, 1) as in `prefill`."""
    if not torch.is_tensor(token):
        token = torch.tensor([[int(token)]], device=engine.device)
    at = {} if positions is None else {"positions": positions}
    return engine.forward(token, cache, **at)[:, -1]


class Stepper(Protocol):
    """Where the decode loop gets its logits: the prompt once, then one token at a time."""

    def prefill(self, ids: list[int]) -> torch.Tensor: ...     # logits (V,) after the prompt
    def decode(self, token: int) -> torch.Tensor: ...          # logits (V,) after one more token


class PromptCache:
    """Prefix caching of whole prompts (the prefix-caching page's idea, used by the app itself):
    the KV cache and last logits of the prompts prefilled most recently on one engine. Another
    generation from the same prompt (a page's greedy and sampled continuations after its
    next-token logits) starts from a copy of them instead of running the prompt through the
    model again. At most `max_bytes` of entries and logits are kept (least recently used go)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.entries: OrderedDict[tuple[int, ...], tuple] = OrderedDict()   # ids -> (cache, logits, bytes)
        self.lock = threading.Lock()
        self.hits = 0

    def get(self, ids: tuple[int, ...]):
        """(a copy of the cache after `ids`, their last logits (V,)) or None."""
        with self.lock:
            if ids not in self.entries:
                return None
            self.entries.move_to_end(ids)
            cache, logits, _ = self.entries[ids]
            self.hits += 1
        return cache.clone(), logits.clone()

    def put(self, ids: tuple[int, ...], cache, logits: torch.Tensor) -> None:
        size = cache.nbytes() + logits.nbytes
        if size > self.max_bytes:
            return
        with self.lock:
            self.entries[ids] = (cache.clone(), logits, size)
            self.entries.move_to_end(ids)
            while sum(e[2] for e in self.entries.values()) > self.max_bytes:
                self.entries.popitem(last=False)


PROMPT_CACHE_BYTES = 48 << 20           # ~30 short prompts (1 MB of logits + ~36 KB per token each)
_prompt_caches: "weakref.WeakKeyDictionary[Engine, PromptCache]" = weakref.WeakKeyDictionary()
_prompt_caches_lock = threading.Lock()


def prompt_cache(engine: Engine) -> PromptCache:
    """The engine's PromptCache (one per engine, made on first use)."""
    with _prompt_caches_lock:
        if engine not in _prompt_caches:
            _prompt_caches[engine] = PromptCache(PROMPT_CACHE_BYTES)
        return _prompt_caches[engine]


class DenseStepper:
    """The engine with one dense KV cache (the default stepper). A prompt prefilled recently on
    the same engine is taken from its PromptCache (`reuse_prompt=False`: always prefilled)."""

    def __init__(self, engine: Engine, capacity: int, reuse_prompt: bool = True):
        self.engine, self.cache = engine, engine.new_cache(1, capacity=capacity)
        self.prompts = prompt_cache(getattr(engine, "engine", engine)) if reuse_prompt else None  # a Seat's engine

    def prefill(self, ids: list[int]) -> torch.Tensor:
        hit = self.prompts.get(tuple(ids)) if self.prompts is not None else None
        if hit is not None:
            self.cache, logits = hit
            return logits
        logits = prefill(self.engine, torch.tensor([ids], device=self.engine.device), self.cache)[0][0]
        if self.prompts is not None and isinstance(self.cache, KVCache):
            self.prompts.put(tuple(ids), self.cache, logits)
        return logits

    def decode(self, token: int) -> torch.Tensor:
        return decode_one_token(self.engine, token, self.cache)[0]


def choose_token(raw: torch.Tensor, cfg: SamplingConfig, gen: torch.Generator,
                 context=()) -> tuple[PipelineResult, int]:
    """One step's choice: the sampling pipeline on raw logits (V,), then one draw from `gen`
    (T = 0: the argmax, no draw). Every generator's per-token choice is this function."""
    res = run_pipeline(raw, cfg, context=context)
    return res, sample_next(res.probs, gen, res.kept_count)


# Choosing a token works on whole-vocabulary tensors (~7 MB for 262,144 tokens: the pipeline's
# stages, the draw, the step's record). Sixty generations of a class come back from one batched
# step together; choosing all at once would hold 60 x 7 MB on a 2-core machine that can only
# work on two of them anyway. So at most this many choose at once, the others wait their turn.
CHOOSING = threading.BoundedSemaphore(max(2, os.cpu_count() or 2))


def decode_loop(stepper: Stepper, prompt_ids, cfg: SamplingConfig, seed: int, max_new_tokens: int,
                eos_ids: tuple[int, ...] = (), on_step: OnStep | None = None) -> list[int]:
    """The loop itself: prefill, then sample -> on_step -> decode one token, until
    max_new_tokens or an end token (no forward after the last token). The new ids.
    Choosing runs on one core; the forwards take all cores themselves (lib/core/threads.py)."""
    gen = torch.Generator().manual_seed(int(seed))
    ids = list(prompt_ids)
    with threads.one_core():
        logits = stepper.prefill(ids) if max_new_tokens > 0 else None              # (V,)
        for i in range(max_new_tokens):
            with CHOOSING:
                raw = logits.float().cpu()                                         # (V,)
                res, token = choose_token(raw, cfg, gen, context=tuple(ids))
                if on_step is not None:
                    on_step(raw, res, token)
                del raw, res                # not held while this session waits for its next step
            ids.append(token)
            if token in eos_ids or i == max_new_tokens - 1:
                break
            del logits                      # nor this step's logits (1 MB) while it waits
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


@batching.joins_batches
def checked_greedy(engine: Engine, prompt_ids, max_new_tokens: int, eos_ids: tuple[int, ...] = (),
                   top_n: int = 5) -> tuple[list[StepRecord], int]:
    """The greedy continuation (a StepRecord per token) and its teacher-forced check
    (`argmax_mismatches`: 0 when every token is the argmax), under one seat at the scheduler:
    the check's forward joins the step right after the last token, with the other sessions'
    checks, instead of arriving a moment after that step has started without it."""
    with batching.seat(engine):
        steps = continuation(engine, prompt_ids, SamplingConfig(0.0), 0, max_new_tokens, eos_ids, top_n)
        return steps, argmax_mismatches(engine, prompt_ids, tuple(s.token for s in steps))


# ---- one-forward helpers -------------------------------------------------------------------
@batching.joins_batches
def next_token_logits(engine: Engine, prompt_ids) -> torch.Tensor:
    """The model's logits (V,) for the token after `prompt_ids`, as float32 on the CPU
    (batched with other sessions' work like `generate`)."""
    with batching.seat(engine) as model:
        logits = DenseStepper(model, capacity=len(prompt_ids) + 1).prefill(list(prompt_ids))   # (V,)
    return logits.float().cpu()


@batching.joins_batches
def argmax_mismatches(engine: Engine, prompt_ids, new_ids) -> int:
    """Teacher-forced check of a greedy path: run the prompt's last token + the new tokens in
    one forward and count the generated tokens that are NOT the argmax of the logits just
    before them (0 = greedy). Its len(new_ids) positions predict the new tokens (the last new
    token predicts none), each computed anew in one forward, not one token at a time as they
    were generated. The keys and values of the prompt before its last token come from the
    prompt's own prefill when the engine still holds it (PromptCache: a class's thirty checks
    then run 12 tokens each instead of ~25); otherwise the whole prompt is run again. Batched
    with other sessions' forwards like `generate`."""
    if not new_ids:
        return 0
    prompt = list(prompt_ids)
    hit = prompt_cache(getattr(engine, "engine", engine)).get(tuple(prompt)) if len(prompt) > 1 else None
    if hit is not None:
        cache = hit[0]
        cache.crop(len(prompt) - 1)                     # all but the prompt's last token: re-run below
        ids = prompt[-1:] + list(new_ids)[:-1]
    else:
        cache, ids = None, prompt + list(new_ids)[:-1]
    with batching.seat(engine) as model:
        cache = cache if cache is not None else model.new_cache(capacity=len(ids))
        best = model.forward(torch.tensor([ids], device=model.device), cache,
                             n_logits=len(new_ids), argmax=True)                       # (1, k) argmax ids
    return int((best[0].cpu() != torch.tensor(list(new_ids))).sum())
