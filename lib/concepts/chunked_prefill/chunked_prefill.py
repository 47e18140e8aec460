"""Chunked prefill: a long prompt split into pieces gives the same K/V and the same logits,
and each piece takes a bounded slice of time. Also the step costs the scheduler simulation
(lib.concepts.chunked_prefill.scheduler_sim) runs on — measured here with the engine, never typed in.

    one-shot : forward(ids[0:L])                      -> logits
    chunked  : forward(ids[0:c]), forward(ids[c:2c]) … -> the same logits (causal attention:
               a chunk's queries see the cache of earlier chunks plus their own prefix)
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from lib.core.timing import measure


@dataclass
class ChunkCheck:
    n_tokens: int
    chunk: int
    n_chunks: int
    max_abs_diff: float      # max |chunked last logits - one-shot last logits|
    argmax_equal: bool
    cache_diff: float        # max |K or V| difference over every layer of the two caches


def prefill_in_chunks(engine, ids: torch.Tensor, chunk: int, cache=None):
    """Prefill ids (B, L) `chunk` tokens per forward into one cache: chunk i covers tokens
    [i*chunk, (i+1)*chunk) at their absolute positions, and its queries see the K/V of every
    earlier chunk already in the cache. Returns (last logits (B, V), cache)."""
    B, L = ids.shape
    cache = cache if cache is not None else engine.new_cache(B, capacity=L + 64)
    for s in range(0, L, chunk):
        pos = torch.arange(s, min(s + chunk, L), device=ids.device).expand(B, -1)    # (B, c)
        logits = engine.forward(ids[:, s:s + chunk], cache, positions=pos)           # (B, 1, V)
    return logits[:, -1], cache


def chunked_vs_oneshot(engine, ids, chunk: int) -> ChunkCheck:
    """Prefill `ids` in one forward and in chunks of `chunk` tokens; compare logits and K/V."""
    x = torch.tensor([list(ids)], device=engine.device)                   # (1, L)
    c1 = engine.new_cache(1, capacity=x.shape[1] + 64)
    one = engine.forward(x, c1)[:, -1]                                    # (1, V)
    many, c2 = prefill_in_chunks(engine, x, chunk)
    def diff(a, b):                                   # a cache of another length differs entirely
        return float((a - b).abs().max()) if a.shape == b.shape else float("inf")
    kv = max(max(diff(c1.keys(l), c2.keys(l)), diff(c1.values(l), c2.values(l))) for l in range(engine.spec.n_layers))
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
    prefill_spread_s: tuple[float, ...] = ()   # max - min over the repeats of each prefill
    decode_spread_s: tuple[float, ...] = ()
    load_avg: float = float("nan")             # 1-minute load average while measuring
    repeats: int = 0

    def prefill(self, n_tokens: int) -> float:
        """Time for a prefill (or chunk) of n tokens: the straight line a + b·n fitted to the
        measured lengths (least squares, a, b >= 0), so one noisy point cannot reorder lengths."""
        if n_tokens <= 0:
            return 0.0
        a, b = _line_fit(self.prefill_tokens, self.prefill_s)
        return a + b * n_tokens

    def up_to(self, max_tokens: int) -> "StepCosts":
        """The same measurements restricted to prefill lengths <= max_tokens (the decode part
        unchanged): what the page shows for a prompt of max_tokens. The grid is measured once
        per server up to its largest length and sliced for each length the visitor picks; the
        slice holds exactly the lengths a grid measured up to max_tokens would hold."""
        keep = [i for i, n in enumerate(self.prefill_tokens) if n <= max_tokens]
        pick = lambda xs: tuple(xs[i] for i in keep) if xs else ()  # noqa: E731
        return dataclasses.replace(self, prefill_tokens=pick(self.prefill_tokens), prefill_s=pick(self.prefill_s),
                                   prefill_spread_s=pick(self.prefill_spread_s))

    def prefill_line(self) -> tuple[float, float]:
        """(a, b) of the fitted prefill time a + b * tokens, in seconds."""
        return _line_fit(self.prefill_tokens, self.prefill_s)

    def decode(self, batch: int) -> float:
        """Time for one decode step of `batch` sequences: the measured medians joined by
        straight lines (beyond the largest batch measured, the last segment's slope), made
        non-decreasing. Not one line: a decode step's time jumps between batch sizes (seen on
        a 2-core CPU: 105, 177, 436, 484 ms for 1, 2, 4, 8 sequences) and a line through
        them misses a single sequence's step by ~80%."""
        if batch <= 0:
            return 0.0
        pairs = sorted(zip(self.decode_batch, self.decode_s))
        x = np.array([b for b, _ in pairs], float)
        y = np.maximum.accumulate(np.array([s for _, s in pairs], float))     # (more sequences, never less time)
        if len(x) == 1 or batch <= x[-1]:
            return float(np.interp(batch, x, y))                               # (below x[0]: y[0])
        slope = (y[-1] - y[-2]) / (x[-1] - x[-2])
        return float(y[-1] + slope * (batch - x[-1]))


def _line_fit(x, y) -> tuple[float, float]:
    """y = a + b x with a, b >= 0 (time never falls with more tokens), least squares on the
    RELATIVE error (weights 1/y): each length counts the same, so the fixed cost a is pinned by
    the short prefills it dominates. An unweighted fit is pulled by the longest prefill alone
    (attention's cost grows faster than linearly there), and on a busy machine it put the fixed
    cost below zero, which the page then showed as "a fixed 0 ms"."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2:
        return float(y.mean()), 0.0
    w = 1.0 / np.maximum(y, 1e-9)
    b, a = np.polyfit(x, y, 1, w=w)
    if b < 0:
        return float(np.average(y, weights=w * w)), 0.0
    if a < 0:
        return 0.0, float((w * w * x) @ y / ((w * w * x) @ x))
    return float(a), float(b)


def measure_costs(engine, prefill_tokens=(16, 32, 64, 128, 256, 512), decode_batch=(1, 2, 4, 8),
                  context: int = 64, seed: int = 0, repeats: int = 3, on_progress=None) -> StepCosts:
    """Time prefill of each length and one decode step of each batch size with the engine,
    each alone (lib.core.timing.measure: no other model work meanwhile), median of `repeats`.
    Token ids are random but fixed by `seed` (cost does not depend on which tokens)."""
    g = torch.Generator().manual_seed(seed)
    dev = engine.device
    hi = min(1000, engine.spec.vocab)
    rand = lambda *shape: torch.randint(0, hi, shape, generator=g).to(dev)  # noqa: E731
    total = len(prefill_tokens) + len(decode_batch)
    pre, pre_spread, loads = [], [], []
    for i, n in enumerate(prefill_tokens):
        ids = rand(1, n)
        tm = measure(lambda: engine.forward(ids, engine.new_cache(capacity=n)), repeats, warmup=1 if i == 0 else 0)
        pre.append(tm.median_s)
        pre_spread.append(tm.spread_s)
        loads.append(tm.load_avg)
        if on_progress:
            on_progress((i + 1) / total)
    dec, dec_spread = [], []
    for j, b in enumerate(decode_batch):
        cache = engine.new_cache(b, capacity=context + 8)
        engine.forward(rand(b, context), cache, logits="none")
        tok = rand(b, 1)

        def step():
            cache.crop(context)
            engine.forward(tok, cache)
        tm = measure(step, repeats, warmup=0)
        dec.append(tm.median_s)
        dec_spread.append(tm.spread_s)
        loads.append(tm.load_avg)
        if on_progress:
            on_progress((len(prefill_tokens) + j + 1) / total)
    return StepCosts(tuple(prefill_tokens), tuple(pre), tuple(decode_batch), tuple(dec), context,
                     tuple(pre_spread), tuple(dec_spread), float(np.nanmax(loads)) if loads else float("nan"), repeats)
