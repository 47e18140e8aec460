"""A fact placed d tokens before a question: can the model still use it under a cache policy?

    [BOS] fact  filler(d tokens ...)  question  -> p(first token of the answer)

The filler is a piece of real text. All prompts share their beginning, so one masked
prefill runs the longest one; each shorter distance crops the cache (free: a masked cache
never evicts) and runs only its question. Distances are processed longest first, because a
question overwrites the entries after its crop point. The prefill goes PREFILL_CHUNK tokens
at a time through PolicyReads, so each chunk's attention reads only the keys the policy and
the model's own window leave it (the model's own layout over 1,560 tokens: its 3 global layers
read everything, its 15 local ones at most 511 + 256 keys per chunk).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lib.core.cache.policy import CachePolicy
from lib.core.cache.evicting import report
from lib.core.cache.policy_masks import PolicyReads, policy_hooks

PREFILL_CHUNK = 256


@dataclass(frozen=True)
class FactProbe:
    fact_ids: tuple[int, ...]       # BOS + the fact sentence
    filler_ids: tuple[int, ...]     # real text, at least max distance long
    question_ids: tuple[int, ...]
    answer_id: int                  # first token of the answer


@dataclass
class FactResult:
    distances: np.ndarray           # (D,) tokens from the last fact token to the last question token
    prob: np.ndarray                # (D,) p(answer) at the end of the question
    rank: np.ndarray                # (D,) 0 = the model's top choice
    seconds: float = 0.0


def build_probe(tokenizer, fact: str, filler: str, question: str, answer: str) -> FactProbe:
    fact_ids = tokenizer(fact, add_special_tokens=True)["input_ids"]
    filler_ids = tokenizer(filler, add_special_tokens=False)["input_ids"]
    question_ids = tokenizer(question, add_special_tokens=False)["input_ids"]
    answer_id = tokenizer(answer, add_special_tokens=False)["input_ids"][0]
    return FactProbe(tuple(fact_ids), tuple(filler_ids), tuple(question_ids), int(answer_id))


def filler_for(probe: FactProbe, d: int) -> int:
    """Filler tokens needed so that the last question token is d positions after the last
    fact token: d = filler + len(question)."""
    n = d - len(probe.question_ids)
    if n < 0:
        raise ValueError(f"distance {d} is shorter than the question ({len(probe.question_ids)} tokens)")
    if n > len(probe.filler_ids):
        raise ValueError(f"distance {d} needs {n} filler tokens, only {len(probe.filler_ids)} available")
    return n


@torch.inference_mode()
def answer_prob(engine, probe: FactProbe, distances: tuple[int, ...], policy: CachePolicy,
                _progress=None) -> FactResult:
    """p(answer) after the question, for each distance, under `policy` (masked)."""
    import time

    t0 = time.perf_counter()
    ds = sorted(set(int(d) for d in distances), reverse=True)
    fills = [filler_for(probe, d) for d in ds]
    prefix = list(probe.fact_ids) + list(probe.filler_ids[:fills[0]])
    kept = engine.new_cache(1, capacity=len(prefix) + len(probe.question_ids))   # every entry, masks evict
    cache = PolicyReads(engine, kept, policy)
    hooks = policy_hooks(engine, cache, policy)
    x = torch.tensor([prefix], device=engine.device)                                  # (1, P)
    for s in range(0, len(prefix), PREFILL_CHUNK):
        engine.forward(x[:, s:s + PREFILL_CHUNK], cache, hooks=hooks, logits="none")
    q = torch.tensor([list(probe.question_ids)], device=engine.device)
    out = {}
    for i, (d, n) in enumerate(zip(ds, fills)):
        kept.crop(len(probe.fact_ids) + n)
        p = torch.softmax(engine.forward(q, cache, hooks=hooks)[0, -1].float(), -1)   # (V,)
        out[d] = (float(p[probe.answer_id]), int((p > p[probe.answer_id]).sum()))
        report(_progress, i + 1, len(ds))
    order = sorted(out)
    return FactResult(np.array(order), np.array([out[d][0] for d in order]),
                      np.array([out[d][1] for d in order]), time.perf_counter() - t0)


@torch.inference_mode()
def answer_prob_without_fact(engine, probe: FactProbe, neutral_ids: tuple[int, ...], d: int) -> tuple[float, int]:
    """Control: the same question after a neutral sentence instead of the fact (dense)."""
    n = filler_for(probe, d)
    ids = list(neutral_ids) + list(probe.filler_ids[:n]) + list(probe.question_ids)
    logits = engine.forward(torch.tensor([ids], device=engine.device), engine.new_cache(1, len(ids)))
    p = torch.softmax(logits[0, -1].float(), -1)
    return float(p[probe.answer_id]), int((p > p[probe.answer_id]).sum())


@dataclass
class Agreement:
    """Where the three layouts must agree and where they part, from this run's numbers."""
    last_fit: int | None        # largest distance whose whole prompt (BOS, fact, filler, question) fits in W
    fit_tokens: int             # that prompt's length
    fit_spread: float           # max − min p(answer) over the layouts there
    first_out: int | None       # smallest distance whose prompt no longer fits
    out_probs: tuple[float, ...]  # p(answer) of each layout there


def agreement(probe: FactProbe, probs: list[np.ndarray], distances, W: int) -> Agreement:
    """probs: one (D,) array of p(answer) per layout, over `distances` (sorted)."""
    P = np.stack(probs)                                                       # (layouts, D)
    n_fact = len(probe.fact_ids)
    fit = [i for i, d in enumerate(distances) if n_fact + d <= W]
    out = [i for i, d in enumerate(distances) if n_fact + d > W]
    i = fit[-1] if fit else None
    j = out[0] if out else None
    return Agreement(None if i is None else int(distances[i]), 0 if i is None else n_fact + int(distances[i]),
                     0.0 if i is None else float(P[:, i].max() - P[:, i].min()),
                     None if j is None else int(distances[j]), () if j is None else tuple(float(x) for x in P[:, j]))
