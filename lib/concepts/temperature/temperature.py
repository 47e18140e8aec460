"""Temperature: logits / T keeps every token's rank but changes how peaked softmax is.

  T -> 0 : all mass on the argmax (handled as greedy, never as a division by 0)
  T = 1  : the model's own distribution
  T > 1  : flatter, more tokens get a real chance
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from lib.decoding import vocab_max
from lib.decoding.float_sort import sort_floats
from lib.decoding.sampling import apply_temperature


def temperature_probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / T) over (V,); T = 0 -> one-hot on the argmax."""
    x = logits.float()
    if temperature == 0:
        return torch.zeros_like(x).scatter(-1, x.argmax(-1, keepdim=True), 1.0)
    return torch.softmax(apply_temperature(x, temperature), dim=-1)


def temperature_log_probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """log softmax(logits / T) over (V,), T > 0: the log of temperature_probs, in one pass
    (no log of the probabilities, which is the slow part of an entropy)."""
    return torch.log_softmax(apply_temperature(logits.float(), temperature), dim=-1)


def entropy_bits(probs: torch.Tensor, log_probs: torch.Tensor | None = None) -> float:
    """H(p) = -sum p log2 p, with 0 log 0 = 0; never -0.0 (a one-hot gives +0.0).

    `log_probs`: log p, if the caller has it (temperature_log_probs of the same logits and T);
    otherwise it is computed here. Each term p log p in the probabilities' own precision,
    their sum in float64 (262,144 terms; converting p to float64 first gives the same bits to
    1e-8 and takes 3x as long). 0 log 0 = 0: p is raised to the smallest normal float before
    its log, so a 0 term is 0 x log(tiny) = 0 (a p below that would add under 1e-36); a given
    log p of -inf where p = 0 counts 0 too."""
    if log_probs is None:
        log_probs = torch.log(probs.clamp_min(torch.finfo(probs.dtype).tiny))       # (V,)
    terms = probs * log_probs.clamp_min(torch.finfo(log_probs.dtype).min)           # (V,) no 0 x -inf
    return max(0.0, float(-terms.sum(dtype=torch.float64)) / math.log(2))


@dataclass
class TemperatureSweep:
    temperatures: np.ndarray   # (n,)
    entropy_bits: np.ndarray   # (n,)
    top1_prob: np.ndarray      # (n,)
    top_ids: np.ndarray        # (k,) the k most likely token ids at T = 1
    top_probs: np.ndarray      # (n, k) their probabilities at each T


def sweep(logits: torch.Tensor, temperatures, top_k: int = 10) -> TemperatureSweep:
    """Entropy, top-1 probability and the top-k tokens' probabilities at each temperature."""
    temps = np.asarray(list(temperatures), dtype=np.float64)
    top_ids = torch.topk(logits.float(), top_k).indices
    ent, top1, tp = [], [], []
    for T in temps:
        p = temperature_probs(logits, float(T))                                       # (V,)
        ent.append(entropy_bits(p, temperature_log_probs(logits, float(T)) if T > 0 else None))
        top1.append(float(p.max()))
        tp.append(p[top_ids].numpy())
    return TemperatureSweep(temps, np.array(ent), np.array(top1), top_ids.numpy(), np.array(tp))


@dataclass(frozen=True)
class AtTemperature:
    temperature: float
    entropy_bits: float
    top_id: int              # the most likely token at this T
    top_prob: float          # its probability
    argmax_prob: float       # the probability at this T of the logits' own argmax (T = 1's top token)
    tokens_for_90: int       # how many of the most likely tokens hold 90% of the probability


def at_temperatures(logits: torch.Tensor, temperatures) -> list[AtTemperature]:
    """The numbers a page states about a few temperatures, one softmax each. Only these small
    records are returned, so thirty sessions' pages hold no (V,) distributions of their own."""
    argmax = int(torch.argmax(logits))
    out = []
    for T in temperatures:
        p = temperature_probs(logits, float(T))                                       # (V,)
        top = vocab_max.argmax(p)
        lp = temperature_log_probs(logits, float(T)) if T > 0 else None
        out.append(AtTemperature(float(T), entropy_bits(p, lp), top, float(p[top]), float(p[argmax]),
                                 tokens_for_mass(p, 0.9)))
    return out


def rank_order(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Token ids from most to least likely after dividing by T (stable sort: ties keep id order).

    Computed in float64: there x / T of two different float32 logits never rounds to the same
    number, so the check tests the real-arithmetic claim. (In float32, dividing by a large T can
    round neighbouring logits to equal values — a tie, not a reversal.)"""
    return sort_floats(apply_temperature(logits.double(), temperature), descending=True, stable=True).indices


def ranks_identical(logits: torch.Tensor, temperatures) -> tuple[bool, int]:
    """(all orders equal the T = 1 order, number of positions that differ at worst).

    The T = 1 order is sorted once. At each T it is still the order exactly when the scaled
    logits read in that order never increase, and two equal neighbours were equal logits
    already (a stable sort keeps their id order): one pass over V values per T, not a sort.
    Only a T that fails that test is sorted, to count the positions that differ."""
    ref = rank_order(logits, 1.0)                                                   # (V,)
    x = logits.double()[ref]                                                        # (V,) descending
    worst = 0
    for T in temperatures:
        if T > 0:
            y = apply_temperature(x, float(T))                                      # (V,)
            if bool(((y[1:] > y[:-1]) | ((y[1:] == y[:-1]) & (x[1:] != x[:-1]))).any()):
                worst = max(worst, int((rank_order(logits, float(T)) != ref).sum()))
    return worst == 0, worst


def diff_vs_transformers(logits: torch.Tensor, temperature: float, ours: torch.Tensor | None = None) -> float:
    """max |our probs - softmax(TemperatureLogitsWarper(T)(logits))| at one T > 0. `ours`:
    temperature_probs(logits, T) if the caller has it already (else computed here)."""
    from transformers import TemperatureLogitsWarper

    theirs = torch.softmax(TemperatureLogitsWarper(float(temperature))(None, logits.float()[None].clone()), dim=-1)[0]
    p = ours if ours is not None else temperature_probs(logits, float(temperature))
    return float((p - theirs).abs().max())


def max_diff_vs_transformers(logits: torch.Tensor, temperatures) -> float:
    """max |our probs - transformers' TemperatureLogitsWarper probs| over the T > 0."""
    return max((diff_vs_transformers(logits, float(T)) for T in temperatures if T > 0), default=0.0)


def is_monotonic_increasing(values, tol: float = 1e-9) -> bool:
    v = np.asarray(values)
    return bool(np.all(np.diff(v) >= -tol))


def tokens_for_mass(probs: torch.Tensor, mass: float = 0.9) -> int:
    """How many of the most likely tokens it takes to cover `mass` of the probability.

    Only tokens with p >= a floor are sorted, and only once those alone hold `mass` (the
    answer's tokens are then all among them): the floor starts at 1e-4 and drops tenfold until
    they do, down to sorting everything. Same count as sorting all V, a few hundred tokens
    sorted instead of 262,144 when the distribution is peaked."""
    floor = 1e-4
    while True:
        top = probs[probs >= floor] if floor > 0 else probs                          # (n,) n <= V
        held = torch.cumsum(sort_floats(top, descending=True).values, 0)            # (n,)
        if floor == 0 or (len(held) and float(held[-1]) >= mass):
            return int((held < mass).sum()) + 1
        floor = floor / 10 if floor > 1e-12 else 0.0


def scaled_logits(logits: torch.Tensor, token_ids, temperatures) -> list[list[float]]:
    """logit / T for the given tokens at each T > 0: rows = temperatures."""
    x = logits.float()[torch.as_tensor(token_ids)]
    return [(x / float(T)).tolist() for T in temperatures]
