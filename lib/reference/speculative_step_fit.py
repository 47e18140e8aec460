"""SpeculativeDecoder.step itself against the target's distribution: a χ² of the first token
each of many seeded blocks emits.

    fits = step_fits(p, q)         # p, q (V,): the target's and the draft's distributions

Two series of `RUNS` blocks, each through the decoder's own `step` (proposal, acceptance,
residual draw, bonus draw, rollback), with the target and the draft REPLAYED: the target's
forward answers with the logits log p it produced once, the draft proposes x ~ q with the
decoder's generator (as EngineDraft does). Speculative sampling is exact, so:
  - gamma = 1: the first emitted token (the accepted draft, or the residual's draw) follows p;
  - gamma = 0: the block's only token is the BONUS draw from p (a bonus taken as the argmax,
    or drawn from q, is caught here).
To keep 2 x 1,000 blocks cheap (~0.5 s instead of minutes over 262,144 tokens), p and q are
POOLED first: the union of their POOL_TOP most likely tokens keeps its own entries, all other
tokens are summed into one "rest" token. The rule is exact for ANY pair of distributions, the
pooled pair included, so pooling hides none of these bugs. The χ² is lib.reference.draw_test's.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.decoding.speculative.speculative_decode import SpeculativeDecoder
from lib.decoding.sampling import SamplingConfig, sample_next
from lib.reference.draw_test import Fit, chi_square

POOL_TOP = 63        # per distribution; the union of both tops keeps its own entries
RUNS = 1_000         # blocks per series (~0.3 ms each on an idle core)


def pool_pair(p: torch.Tensor, q: torch.Tensor, top: int = POOL_TOP) -> tuple[torch.Tensor, torch.Tensor]:
    """(p', q') (m + 1,) float64: p and q on the union of their `top` most likely tokens, then
    one entry with everything else (clamped at 0)."""
    p, q = p.detach().double().cpu(), q.detach().double().cpu()
    ids = torch.unique(torch.cat([torch.topk(p, top).indices, torch.topk(q, top).indices]))   # (m,)
    out = []
    for d in (p, q):
        head = d[ids]
        out.append(torch.cat([head, (d.sum() - head.sum()).clamp(min=0).reshape(1)]))
    return out[0], out[1]


class _NoCache:
    """The replayed target keeps no K/V: nothing to crop."""
    def length(self, layer: int) -> int:
        return 0

    def crop(self, n: int) -> None:
        pass


class _ReplayTarget:
    """A target Engine stand-in: every forward of g + 1 tokens answers log p at each position."""
    device = "cpu"

    def __init__(self, p: torch.Tensor):
        self.logits = torch.log(p.float())                                         # (V',) -inf where p = 0

    def new_cache(self, capacity: int = 0, batch: int = 1) -> _NoCache:
        return _NoCache()

    def forward(self, ids: torch.Tensor, cache, logits="all") -> torch.Tensor:
        return self.logits.expand(1, ids.shape[1], -1)                              # (1, g+1, V')


class _ReplayDraft:
    """A draft that proposes (at most) one token x ~ q with the decoder's generator."""
    deterministic = False

    def __init__(self, q: torch.Tensor):
        self.q = q.float()

    def reset(self, prompt_ids) -> None:
        pass

    def propose(self, context, gamma: int, cfg, gen: torch.Generator):
        if gamma <= 0:
            return [], None
        return [sample_next(self.q, gen)], self.q[None]                             # (1,), (1, V')

    def rollback(self, n_committed: int) -> None:
        pass


@dataclass(frozen=True)
class StepFits:
    first: Fit          # gamma = 1: the first emitted token against p
    bonus: Fit          # gamma = 0: the bonus token against p
    accepted: float     # share of the gamma = 1 blocks that kept the draft token
    alpha: float        # sum min(p', q'): the acceptance they should have
    entries: int        # entries of the pooled distributions


def first_tokens(p: torch.Tensor, q: torch.Tensor, gamma: int, runs: int, seed: int) -> tuple[list[int], int]:
    """The first emitted token of `runs` seeded SpeculativeDecoder.step(gamma) blocks, and how
    many kept the draft's proposal."""
    dec = SpeculativeDecoder(_ReplayTarget(p), _ReplayDraft(q), SamplingConfig(1.0), seed)
    dec.start([0])
    out, kept = [], 0
    for _ in range(runs):
        rec = dec.step(gamma)
        out.append(rec.proposals[0] if rec.accepted else rec.token)
        kept += rec.accepted
    return out, kept


def step_fits(p: torch.Tensor, q: torch.Tensor, runs: int = RUNS, seed: int = 0) -> StepFits:
    """Both series on the pooled pair (pool_pair), χ² against the pooled p."""
    pp, qp = pool_pair(p, q)
    first, kept = first_tokens(pp, qp, 1, runs, seed)
    bonus, _ = first_tokens(pp, qp, 0, runs, seed + 1)
    ref = pp.numpy()
    return StepFits(chi_square(first, ref), chi_square(bonus, ref), kept / runs,
                    float(torch.minimum(pp / pp.sum(), qp / qp.sum()).sum()), len(pp))
