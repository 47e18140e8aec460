"""Chunked prefill: a long prompt split into pieces gives the same K/V and the same logits,
and each piece takes a bounded slice of time. Also the step costs the scheduler simulation
(lib.concepts.chunked_prefill.scheduler_sim) runs on — measured here with the engine, never typed in.

    one-shot : forward(ids[0:L])                      -> logits
    chunked  : forward(ids[0:c]), forward(ids[c:2c]) … -> the same logits (causal attention:
               a chunk's queries see the cache of earlier chunks plus their own prefix)
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np
import torch

from lib.decoding.generate import prefill


@dataclass
class ChunkCheck:
    n_tokens: int
    chunk: int
    n_chunks: int
    max_abs_diff: float      # max |chunked last logits - one-shot last logits|
    argmax_equal: bool
    cache_diff: float        # max |K or V| difference over every layer of the two caches


def chunked_vs_oneshot(engine, ids, chunk: int) -> ChunkCheck:
    """Prefill `ids` in one forward and in chunks of `chunk` tokens; compare logits and K/V."""
    x = torch.tensor([list(ids)], device=engine.device)                   # (1, L)
    one, c1 = prefill(engine, x)
    many, c2 = prefill(engine, x, chunk=chunk)
    kv = max(max(float((c1.keys(l) - c2.keys(l)).abs().max()), float((c1.values(l) - c2.values(l)).abs().max()))
             for l in range(engine.spec.n_layers))
    return ChunkCheck(len(ids), chunk, -(-len(ids) // chunk), float((one - many).abs().max()),
                      int(one.argmax()) == int(many.argmax()), kv)


@dataclass(frozen=True)
class StepCosts:
    """Measured seconds per engine call on this machine.
    prefill_s[i]: a forward of prefill_tokens[i] prompt tokens into an empty cache.
    decode_s[j] : one decode step (one new token each) for decode_batch[j] sequences that
                  already hold `context` tokens."""
    prefill_tokens: tuple[int, ...]
    prefill_s: tuple[float, ...]
    decode_batch: tuple[int, ...]
    decode_s: tuple[float, ...]
    context: int

    def prefill(self, n_tokens: int) -> float:
        """Time for a prefill (or chunk) of n tokens: the straight line a + b·n fitted to the
        measured lengths (least squares, a, b >= 0), so one noisy point cannot reorder lengths."""
        if n_tokens <= 0:
            return 0.0
        a, b = _line_fit(self.prefill_tokens, self.prefill_s)
        return a + b * n_tokens

    def decode(self, batch: int) -> float:
        """Time for one decode step of `batch` sequences (same kind of fit over batch sizes)."""
        if batch <= 0:
            return 0.0
        a, b = _line_fit(self.decode_batch, self.decode_s)
        return a + b * batch


def _line_fit(x, y) -> tuple[float, float]:
    """Least-squares y = a + b x with a, b >= 0 (time never falls with more tokens)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2:
        return float(y.mean()), 0.0
    b, a = np.polyfit(x, y, 1)
    if b < 0:
        return float(y.mean()), 0.0
    if a < 0:
        return 0.0, float((x @ y) / (x @ x))
    return float(a), float(b)


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure_costs(engine, prefill_tokens=(16, 32, 64, 128, 256, 512), decode_batch=(1, 2, 4, 8),
                  context: int = 64, seed: int = 0, on_progress=None) -> StepCosts:
    """Time prefill of each length and one decode step of each batch size with the engine
    (median of 3 runs; 1 run for prompts over 128 tokens, which take long enough to be stable).
    Token ids are random but fixed by `seed` (cost does not depend on which tokens)."""
    g = torch.Generator().manual_seed(seed)
    dev = engine.device
    hi = min(1000, engine.spec.vocab)
    rand = lambda *shape: torch.randint(0, hi, shape, generator=g).to(dev)  # noqa: E731
    engine.forward(rand(1, 8), engine.new_cache(capacity=8))                  # warm-up
    total = len(prefill_tokens) + len(decode_batch)
    pre = []
    for i, n in enumerate(prefill_tokens):
        ids = rand(1, n)
        pre.append(_median_time(lambda: engine.forward(ids, engine.new_cache(capacity=n)), 3 if n <= 128 else 1))
        if on_progress:
            on_progress((i + 1) / total)
    dec = []
    for j, b in enumerate(decode_batch):
        cache = engine.new_cache(b, capacity=context + 8)
        engine.forward(rand(b, context), cache, logits="none")
        tok = rand(b, 1)

        def step():
            cache.crop(context)
            engine.forward(tok, cache)
        dec.append(_median_time(step, 3))
        if on_progress:
            on_progress((len(prefill_tokens) + j + 1) / total)
    return StepCosts(tuple(prefill_tokens), tuple(pre), tuple(decode_batch), tuple(dec), context)
