"""Top-k keeps a fixed COUNT of tokens; top-p (nucleus) keeps a fixed MASS.

  top-k: the k most likely tokens, whatever probability they hold
  top-p: the smallest set of most likely tokens whose probability reaches p — two tokens at a
         confident step, hundreds at an uncertain one

Both filters come from lib.decoding.sampling (the pipeline every page samples with); this module only
measures what they keep: on one distribution, along a generated continuation, and under the
two stage orders (temperature before or after top-p).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lib.core.engine import Engine
from lib.decoding.float_sort import sort_floats
from lib.decoding.sampling import SamplingConfig, apply_temperature, run_pipeline, top_k_mask, top_p_mask
from lib.decoding import vocab_max
from lib.decoding.generate import generate
from lib.decoding.step_record import StepRecord, describe_step

TOP_KEPT = 256   # per-step probabilities kept by nucleus_trace (the page's k goes up to 200)
FAST_K = 20      # vocab_max.top_k is compared with torch.topk at every step for this many tokens
LATE_TEMPERATURE = ("bias", "top_k", "top_p", "temperature", "min_p")  # top-p sees the T = 1 distribution


def probs_at(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / T) (V,) in float32, as the filters see it."""
    return torch.softmax(apply_temperature(logits.float(), temperature), dim=-1)


@dataclass
class CutCurve:
    ids: np.ndarray          # (N,) token ids, most likely first
    probs: np.ndarray        # (N,) their probabilities at temperature T
    cumulative: np.ndarray   # (N,) cumulative probability down the ranking
    nucleus: int             # tokens top-p keeps
    nucleus_mass: float      # probability those tokens hold (>= p)
    k_kept: int              # tokens top-k keeps (k, or more when the k-th value is tied)
    k_mass: float            # probability those tokens hold
    vocab: int


def cut_curve(logits: torch.Tensor, temperature: float, k: int, p: float, max_rank: int = 4096) -> CutCurve:
    """The sorted cumulative-probability curve of one step, with where each filter cuts.
    The curve covers ranks 1..N, N = min(V, max_rank, max(64, 2 x the larger kept set))."""
    x = apply_temperature(logits.float(), temperature)                             # (V,)
    probs = torch.softmax(x, dim=-1)                                               # (V,)
    p_mask, k_mask = top_p_mask(x, p), top_k_mask(x, k)
    nucleus, k_kept = int(p_mask.sum()), int(k_mask.sum())
    n = min(x.shape[-1], max_rank, max(64, 2 * max(nucleus, k_kept)))
    top = sort_floats(probs, descending=True, stable=True)
    cum = torch.cumsum(top.values.double(), 0)[:n]                                 # (N,)
    return CutCurve(top.indices[:n].numpy(), top.values[:n].numpy(), cum.numpy(), nucleus,
                    float(probs[p_mask].double().sum()), k_kept, float(probs[k_mask].double().sum()),
                    int(x.shape[-1]))


@dataclass
class KeptSets:
    ids: np.ndarray          # (M,) the M most likely token ids
    probs: np.ndarray        # (M,)
    in_k: np.ndarray         # (M,) bool: kept by top-k
    in_p: np.ndarray         # (M,) bool: kept by top-p
    both: int                # counts over the whole vocabulary
    only_k: int
    only_p: int


def kept_sets(logits: torch.Tensor, temperature: float, k: int, p: float, show: int = 60) -> KeptSets:
    """Which tokens top-k and top-p keep on the same distribution."""
    x = apply_temperature(logits.float(), temperature)
    probs = torch.softmax(x, dim=-1)
    km, pm = top_k_mask(x, k), top_p_mask(x, p)
    order = sort_floats(probs, descending=True, stable=True).indices[:show]
    return KeptSets(order.numpy(), probs[order].numpy(), km[order].numpy(), pm[order].numpy(),
                    int((km & pm).sum()), int((km & ~pm).sum()), int((pm & ~km).sum()))


@dataclass
class OrderEffect:
    temperatures: np.ndarray   # (n,)
    t_first: np.ndarray        # (n,) tokens kept by temperature -> top-p (the standard order)
    t_after: np.ndarray        # (n,) tokens kept by top-p -> temperature


def order_effect(logits: torch.Tensor, p: float, temperatures) -> OrderEffect:
    """Kept-set size under both stage orders, through the real pipeline (run_pipeline)."""
    first, after = [], []
    for T in temperatures:
        first.append(run_pipeline(logits, SamplingConfig(float(T), top_p=p)).kept_count)
        after.append(run_pipeline(logits, SamplingConfig(float(T), top_p=p, order=LATE_TEMPERATURE)).kept_count)
    return OrderEffect(np.asarray(list(temperatures), dtype=float), np.array(first), np.array(after))


def nucleus_margins(logits: torch.Tensor, mask: torch.Tensor, p: float) -> tuple[float, float]:
    """(kept mass - p, p - (kept mass - smallest kept prob)), with the probabilities recomputed
    in float64 from the logits the filter saw (an exact reference for the float32 filter).
    Both >= 0 means: the set reaches p, and dropping its least likely token would not."""
    kept = torch.softmax(logits.double(), dim=-1)[mask]
    mass = float(kept.sum())
    return mass - p, p - (mass - float(kept.min()))


@dataclass
class NucleusTrace:
    steps: list[StepRecord]      # the generated tokens with their pipeline records
    nucleus: np.ndarray          # (n,) tokens top-p kept at each step
    p_mass: np.ndarray           # (n,) probability those tokens held
    top_probs: np.ndarray        # (n, TOP_KEPT) each step's largest probabilities, sorted
    reach_margin: np.ndarray     # (n,) kept mass - p (>= 0: the set reaches p)
    minimal_margin: np.ndarray   # (n,) p - (mass without the least likely kept token) (> 0: minimal)
    fast_bad: np.ndarray         # (n,) entries where vocab_max (top_k, argmax) differs from torch at the step


def fast_mismatches(raw: torch.Tensor, probs: torch.Tensor, k: int = FAST_K) -> int:
    """Entries where lib.decoding.vocab_max's block maxima disagree with torch on one step:
    top_k's k values (and the values at its ids) against torch.topk of the model's distribution
    and of the final one, plus vocab_max.argmax against torch.argmax of the raw logits."""
    bad = int(vocab_max.argmax(raw) != int(torch.argmax(raw)))
    for x in (torch.softmax(raw.float(), dim=-1), probs):                          # (V,) each
        v, i = vocab_max.top_k(x, k)
        ref = torch.topk(x, k).values
        bad += int((v != ref).sum()) + int((x[i] != ref).sum())
    return bad


def nucleus_trace(engine: Engine, prompt_ids, temperature: float, p: float, seed: int,
                  max_new_tokens: int, eos_ids: tuple[int, ...] = ()) -> NucleusTrace:
    """Sample a continuation with temperature + top-p and measure, at every step, the nucleus
    size and mass; keep each step's TOP_KEPT largest probabilities so the mass top-k would
    keep can be read for any k <= TOP_KEPT without running the model again (top_k_mass)."""
    cfg = SamplingConfig(temperature, top_p=p)
    steps, nuc, pm, km, reach, mini, fast = [], [], [], [], [], [], []

    def on_step(raw, res, token):                                                  # the decode loop's recorder
        x = res.stage("temperature").logits                                       # (V,) what top-p saw
        probs = torch.softmax(x, dim=-1)                                           # (V,)
        mask = res.stage("top_p").kept                                             # (V,) the pipeline's own cut
        r, m = nucleus_margins(x, mask, p)
        steps.append(describe_step(raw, res, token))
        nuc.append(int(mask.sum()))
        pm.append(float(probs[mask].double().sum()))
        km.append(torch.topk(probs, TOP_KEPT).values.double().numpy())
        reach.append(r)
        mini.append(m)
        fast.append(fast_mismatches(raw, res.probs))

    generate(engine, prompt_ids, cfg, seed, max_new_tokens, eos_ids, on_step=on_step)
    return NucleusTrace(steps, np.array(nuc), np.array(pm), np.array(km), np.array(reach), np.array(mini),
                        np.array(fast))


def top_k_mass(trace: NucleusTrace, k: int) -> np.ndarray:
    """(n,) probability the k most likely tokens held at each step of the trace."""
    if not 1 <= k <= trace.top_probs.shape[1]:
        raise ValueError(f"k must be in [1, {trace.top_probs.shape[1]}], got {k}")
    return trace.top_probs[:, :k].sum(axis=1)
