"""The sampler against the distribution it was given: a χ² test of many seeded draws.

    fit = sampler_fit(probs, temperature)     # probs (V,): the page's final distribution

The draws are `lib.decoding.sampling.sample_many`: sample_next's own exponential race
(`race_scores`), run for n draws at once. To keep 20,000 draws cheap (~0.05 s, not the ~40 s of
20,000 calls over 262,144 tokens), the distribution is POOLED first: its POOL_TOP (63) most likely
tokens keep their own entries and every other token is summed into one. Pooling is exact for a
correct sampler (the pooled entry wins with the tail's total probability) and hides none of the
bugs it is meant to catch (a race that scores p/u instead of p/e, a draw that favours the top).

The χ² itself (bins of expected count >= 5, the rest pooled; p-value from torch's regularised
incomplete gamma) shares no code with the sampler.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lib.decoding.sampling import sample_many

POOL_TOP = 63         # tokens kept as their own entry; the rest of the vocabulary is one entry
DRAWS = 20_000
FIT_LEVEL = 1e-3      # a sampler is rejected when its χ² p-value is below this
MIN_EXPECTED = 5.0    # a token with a smaller expected count goes into the "rest" bin


@dataclass(frozen=True)
class Fit:
    n: int             # draws
    chi2: float
    dof: int
    p_value: float
    tv: float          # total variation between the observed and expected bin shares
    tv_noise: float    # TV expected from sampling noise alone, sqrt(dof / (2 pi n))

    @property
    def passed(self) -> bool:
        return self.p_value > FIT_LEVEL


def chi2_sf(x: float, dof: int) -> float:
    """P(χ²_dof > x) = Q(dof/2, x/2), the regularised upper incomplete gamma (float64)."""
    return float(torch.special.gammaincc(torch.tensor(dof / 2.0, dtype=torch.float64),
                                         torch.tensor(x / 2.0, dtype=torch.float64)))


def chi_square(samples: np.ndarray, p: np.ndarray, min_expected: float = MIN_EXPECTED) -> Fit:
    """χ² of integer `samples` (n,) against the distribution p (V,) (float64, sums to ~1):
    every entry with expected count n p >= min_expected is its own bin, the others one bin."""
    n = len(samples)
    p = np.asarray(p, dtype=np.float64) / np.sum(p)
    own = np.nonzero(p * n >= min_expected)[0]                                      # (k,)
    counts = np.bincount(np.asarray(samples), minlength=len(p)).astype(np.float64)  # (V,)
    obs = np.append(counts[own], n - counts[own].sum())                             # (k+1,)
    exp = np.append(p[own] * n, n - p[own].sum() * n)
    if exp[-1] < min_expected:                                                      # fold a small rest in
        obs, exp = obs[:-1].copy(), exp[:-1].copy()
        obs[-1] += n - obs.sum()
        exp[-1] += n - exp.sum()
    keep = exp > 0
    chi2 = float((((obs - exp) ** 2)[keep] / exp[keep]).sum())
    if np.any(obs[~keep] > 0):                                   # a draw where nothing was expected
        chi2 = float("inf")
    dof = max(int(keep.sum()) - 1, 1)
    return Fit(n, chi2, dof, chi2_sf(chi2, dof) if np.isfinite(chi2) else 0.0,
               0.5 * float(np.abs(obs - exp).sum() / n), float(np.sqrt(dof / (2 * np.pi * n))))


def pooled(probs: torch.Tensor, top: int = POOL_TOP) -> torch.Tensor:
    """probs (V,) -> (top + 1,) float64: the `top` most likely probabilities (torch.topk), then
    the sum of all the others (clamped at 0: float rounding)."""
    p = probs.detach().double().cpu()
    head = torch.topk(p, min(top, p.shape[0])).values                              # (top,)
    return torch.cat([head, (p.sum() - head.sum()).clamp(min=0).reshape(1)])


def sampler_fit(probs: torch.Tensor, n: int = DRAWS, seed: int = 0) -> Fit:
    """χ² of n seeded sample_many draws from pooled(probs) against pooled(probs)."""
    p = pooled(probs)
    gen = torch.Generator().manual_seed(int(seed))
    return chi_square(sample_many(p, n, gen).numpy(), p.numpy())
