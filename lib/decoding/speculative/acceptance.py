"""Speculative sampling: the accept / correct rule that keeps the target's distribution exact.

A cheap draft proposes a token x ~ q; the target's distribution at that position is p.

    accept x with probability min(1, p(x) / q(x))
    on rejection draw the token from the residual  r = norm(max(0, p - q))

The output then follows p exactly, whatever q is (Leviathan et al. 2023, Chen et al. 2023):
    P(out = y) = q(y) min(1, p(y)/q(y)) + (1 - sum_x min(p, q)) r(y)
               = min(p(y), q(y))        + (p(y) - min(p(y), q(y)))      = p(y).
The draft's quality only decides how often a proposal passes:
    acceptance probability alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q).

Everything here works on one position's distributions p, q: (V,) float tensors that sum to 1.
Randomness only comes from the `torch.Generator` the caller passes in.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

CORRECTIONS = ("residual", "target", "none")
# residual: the exact rule.  target: on rejection draw from p instead of the residual (the
# "obvious" shortcut, wrong).  none: keep the draft token, no verification (output = q, wrong).


def _dist(p: torch.Tensor) -> torch.Tensor:
    """float64 copy renormalised to sum 1 (a float32 softmax over 262,144 tokens sums to 1
    only up to ~1e-5; the identities below hold exactly for true distributions)."""
    d = p.double()
    return d / d.sum()


def acceptance_probability(p: torch.Tensor, q: torch.Tensor) -> float:
    """alpha = sum_x min(p(x), q(x)): the chance a proposal x ~ q is accepted."""
    return float(torch.minimum(_dist(p), _dist(q)).sum())


def total_variation(p: torch.Tensor, q: torch.Tensor) -> float:
    """TV(p, q) = 1/2 sum_x |p(x) - q(x)|  (= 1 - alpha)."""
    return 0.5 * float((_dist(p) - _dist(q)).abs().sum())


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(0, p - q)) (V,): where the target wants more mass than the draft gave.
    If p == q there is nothing to correct (rejection never happens): returns p."""
    r = torch.clamp(p.double() - q.double(), min=0.0)
    total = r.sum()
    return (r / total).to(p.dtype) if total > 0 else p.clone()


def acceptance_ratio(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """min(1, p(x) / q(x)) for proposals x ~ q (so q(x) > 0): q(x) <= p(x) always passes."""
    return torch.clamp(p_x.double() / q_x.double(), max=1.0)


def _draw(dist: torch.Tensor, n: int, gen: torch.Generator) -> torch.Tensor:
    """n tokens from `dist` (V,); a one-hot dist (greedy) gives its token without a draw."""
    if int((dist > 0).sum()) == 1:
        return torch.full((n,), int(dist.argmax()), dtype=torch.long)
    return torch.multinomial(dist.float(), n, replacement=True, generator=gen)


@dataclass
class Verdict:
    """The verification of n proposals x_i ~ q at one position (n = 1 in the decoder)."""
    accepted: torch.Tensor     # (n,) bool: u < min(1, p(x)/q(x))
    out: torch.Tensor          # (n,) the output token: x if accepted, else a correction draw
    u: torch.Tensor            # (n,) the uniform draws
    ratio: torch.Tensor        # (n,) min(1, p(x)/q(x))


def accept_or_resample(p: torch.Tensor, q: torch.Tensor, x, gen: torch.Generator,
                       correction: str = "residual") -> Verdict:
    """Verify proposals x (int or (n,) ids, each drawn from q) against the target's p.

    Each x is accepted if its uniform draw u < min(1, p(x)/q(x)); a rejected one is replaced
    by a draw from the residual norm(max(0, p - q)). This is the function the decoder runs
    (SpeculativeDecoder.step, n = 1) and the Monte Carlo runs (n trials at once).
    correction: "residual" (exact), "target" (redraw from p: wrong) or "none" (keep x: wrong)."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    x = torch.as_tensor(x, dtype=torch.long).reshape(-1)                         # (n,)
    u = torch.rand(x.shape, generator=gen, dtype=torch.float64)                  # (n,)
    ratio = acceptance_ratio(p[x], q[x])                                         # (n,)
    accepted = u < ratio
    if correction == "none":
        accepted = torch.ones_like(accepted)
    out = x.clone()
    rejected = ~accepted
    n_rej = int(rejected.sum())
    if n_rej:
        # the residual puts back exactly the mass the draft took away where p > q
        out[rejected] = _draw(residual(p, q) if correction == "residual" else p, n_rej, gen)
    return Verdict(accepted, out, u, ratio)


@dataclass
class MonteCarlo:
    """Outputs of many independent accept/correct trials at one position."""
    outputs: np.ndarray        # (n,) output token ids
    accepted: np.ndarray       # (n,) bool: the draft token was kept
    correction: str            # one of CORRECTIONS

    @property
    def acceptance_rate(self) -> float:
        return float(self.accepted.mean())


def monte_carlo(p: torch.Tensor, q: torch.Tensor, n: int, seed: int, correction: str = "residual") -> MonteCarlo:
    """n independent trials of "draft x ~ q, verify against p" through the decoder's own
    `accept_or_resample` (all n at once)."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    gen = torch.Generator().manual_seed(int(seed))
    x = torch.multinomial(q.float(), n, replacement=True, generator=gen)         # (n,) proposals
    v = accept_or_resample(p, q, x, gen, correction)
    return MonteCarlo(v.out.numpy(), v.accepted.numpy(), correction)


@dataclass
class FitTest:
    """Goodness of fit of sampled tokens against p (chi-square over binned tokens)."""
    chi2: float
    dof: int
    p_value: float
    tv: float                  # TV between the empirical and p over the same bins
    tv_noise: float            # TV expected from sampling noise alone, sqrt((k-1) / (2 pi n))
    bins: int

    def passed(self, level: float = 1e-3) -> bool:
        return self.p_value > level


def chi2_sf(x: float, dof: int) -> float:
    """P(chi2_dof > x) = Q(dof/2, x/2) (regularised upper incomplete gamma)."""
    return float(torch.special.gammaincc(torch.tensor(dof / 2.0, dtype=torch.float64),
                                         torch.tensor(x / 2.0, dtype=torch.float64)))


def fit_test(samples: np.ndarray, p: torch.Tensor, min_expected: float = 5.0) -> FitTest:
    """Chi-square test of `samples` (token ids) against p.

    Every token with expected count n p >= min_expected is its own bin; all other tokens are
    pooled into one "rest" bin (so the test is valid: no bin with a tiny expectation)."""
    n = len(samples)
    pd = p.double().numpy()
    own = np.nonzero(pd * n >= min_expected)[0]                  # (k,) tokens with their own bin
    counts_all = np.bincount(samples, minlength=len(pd)).astype(np.float64)
    obs = np.append(counts_all[own], n - counts_all[own].sum())   # (k+1,)
    exp = np.append(pd[own] * n, n - pd[own].sum() * n)
    if exp[-1] < min_expected:                                   # rest too small: fold it in
        obs, exp = obs[:-1].copy(), exp[:-1].copy()
        obs[-1] += n - obs.sum()
        exp[-1] += n - exp.sum()
    keep = exp > 0
    chi2 = float((((obs - exp) ** 2)[keep] / exp[keep]).sum())
    dof = max(int(keep.sum()) - 1, 1)
    tv = 0.5 * float(np.abs(obs - exp).sum() / n)
    tv_noise = float(np.sqrt(dof / (2 * np.pi * n)))
    return FitTest(chi2, dof, chi2_sf(chi2, dof), tv, tv_noise, int(keep.sum()))


@dataclass
class Breakdown:
    """p, q, min(p, q) and the residual on the top tokens, with the rest of the vocabulary summed."""
    token_ids: list[int]       # (k,) the tokens shown: the union of p's and q's top tokens
    p: np.ndarray              # (k+1,)  last entry = all other tokens summed
    q: np.ndarray              # (k+1,)
    overlap: np.ndarray        # (k+1,)  min(p, q)
    residual: np.ndarray       # (k+1,)  norm(max(0, p - q))
    alpha: float               # sum over the whole vocabulary of min(p, q)
    tv: float


def breakdown(p: torch.Tensor, q: torch.Tensor, top: int = 8) -> Breakdown:
    """The page's table: p and q's top-`top` tokens (union, ordered by p) plus 'rest'."""
    ids = torch.cat([torch.topk(p, top).indices, torch.topk(q, top).indices])
    seen: list[int] = []
    for i in ids.tolist():
        if i not in seen:
            seen.append(i)
    seen.sort(key=lambda i: -float(p[i]))
    idx = torch.tensor(seen)
    r = residual(p, q)
    m = torch.minimum(p, q)

    def with_rest(v: torch.Tensor) -> np.ndarray:
        shown = v.double()[idx]
        return np.append(shown.numpy(), float(v.double().sum() - shown.sum()))

    return Breakdown(seen, with_rest(p), with_rest(q), with_rest(m), with_rest(r),
                     acceptance_probability(p, q), total_variation(p, q))


def output_distribution(p: torch.Tensor, q: torch.Tensor, correction: str = "residual") -> torch.Tensor:
    """The exact distribution of the output token under each correction rule (V,):
    residual -> p;  target -> min(p, q) + (1 - alpha) p;  none -> q."""
    m = torch.minimum(p.double(), q.double())
    if correction == "residual":
        return m + (1 - m.sum()) * residual(p, q).double()
    if correction == "target":
        return m + (1 - m.sum()) * p.double()
    return q.double()


def histogram(samples: np.ndarray, token_ids: list[int]) -> np.ndarray:
    """Empirical frequency of each token in `token_ids`, plus everything else summed: (k+1,)."""
    counts = np.array([(samples == t).sum() for t in token_ids], dtype=np.float64)
    return np.append(counts, len(samples) - counts.sum()) / max(len(samples), 1)
