"""Speculative decoding on the engine: draft gamma tokens, verify them in ONE target forward.

State kept between blocks (the invariant): `committed` is every token so far (prompt + output);
the target's KV cache holds all of them except the last, the "pending" token. (A start from a
forward already run over the whole prompt, `start(primed=...)`, holds the pending token too, and
its logits: the first block then feeds only its drafts.)

One block:
    drafts d1..dg = draft.propose(committed)                      q_1..q_g
    target.forward([pending, d1..dg]) -> logits for g + 1 positions p_1..p_{g+1}   (one call)
    for i in 1..g: accept d_i with prob min(1, p_i(d_i)/q_i(d_i)); stop at the first rejection,
                   whose token is drawn from norm(max(0, p_i - q_i))   (lib.decoding.speculative.acceptance)
    all g accepted: one bonus token from p_{g+1}
    rollback: the target cache is cropped to the committed tokens minus the new pending one;
              the draft rolls back its own cache the same way.

Greedy (T = 0) is the same rule: p and q are one-hot, so a draft is accepted iff it is the
target's argmax and the residual is one-hot on that argmax.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from lib.core.cache.dense import KVCache
from lib.core.engine import Engine
from lib.decoding.generate import decode_loop, decode_one_token, prefill
from lib.decoding.sampling import SamplingConfig, run_pipeline, sample_next
from lib.decoding.speculative.acceptance import accept_or_resample, residual


@dataclass
class BlockRecord:
    """What happened in one draft-and-verify block."""
    proposals: list[int]            # (g,) drafted tokens
    q_prob: list[float]             # (g,) q_i(d_i)
    p_prob: list[float]             # (g,) p_i(d_i)
    alpha: list[float]              # (g,) sum_x min(p_i, q_i): expected acceptance at position i
                                    # (positions after the first rejection were scored on a
                                    #  prefix that was thrown away: see `verified_alpha`)
    accepted: int                   # how many proposals were kept (j)
    token: int                      # the token the target added: residual draw (j < g) or bonus
    from_residual: bool             # True if `token` came from the residual after a rejection
    draft_s: float                  # wall time of this block's draft work
    target_s: float                 # wall time of this block's target forward
    u: list[float] = field(default_factory=list)  # (<= g,) the uniform draw of each verified proposal
    top_p: list[list[tuple[int, float]]] = field(default_factory=list)  # per position (g+1): top of p
    top_q: list[list[tuple[int, float]]] = field(default_factory=list)  # per position (g): top of q
    top_r: list[tuple[int, float]] = field(default_factory=list)  # top of the residual at the rejection

    @property
    def emitted(self) -> int:
        return self.accepted + 1

    @property
    def verified_alpha(self) -> list[float]:
        """alpha at the positions that were really verified: up to the first rejection."""
        return self.alpha[:self.accepted + 1]

    @property
    def accept_prob(self) -> list[float]:
        """min(1, p_i(d_i) / q_i(d_i)) for every proposal."""
        return [min(1.0, p / q) if q > 0 else 0.0 for p, q in zip(self.p_prob, self.q_prob)]


@dataclass
class SpecRun:
    prompt_ids: list[int]
    new_ids: list[int] = field(default_factory=list)
    blocks: list[BlockRecord] = field(default_factory=list)
    draft_name: str = ""
    gamma: int = 0
    prefill_s: float = 0.0
    wall_s: float = 0.0             # everything after prefill: draft + verify + bookkeeping

    @property
    def target_calls(self) -> int:
        return len(self.blocks)

    @property
    def tokens_per_call(self) -> float:
        return len(self.new_ids) / max(self.target_calls, 1)

    @property
    def proposed(self) -> int:
        return sum(len(b.proposals) for b in self.blocks)

    @property
    def accepted(self) -> int:
        return sum(b.accepted for b in self.blocks)

    @property
    def alpha(self) -> float:
        """Mean expected acceptance sum min(p, q) over every verified proposal (up to and
        including each block's first rejection)."""
        a = [x for b in self.blocks for x in b.verified_alpha]
        return sum(a) / len(a) if a else 0.0

    @property
    def draft_s(self) -> float:
        return sum(b.draft_s for b in self.blocks)

    @property
    def target_s(self) -> float:
        return sum(b.target_s for b in self.blocks)


def rollback_length(n_before: int, accepted: int) -> int:
    """Entries the target's cache keeps after a block that started with `n_before` entries:
    the pending token it was fed first, plus the accepted drafts (the rejected ones go)."""
    return n_before + 1 + accepted


def _top(probs: torch.Tensor, k: int) -> list[tuple[int, float]]:
    v, i = torch.topk(probs, k)
    return [(int(a), float(b)) for a, b in zip(i, v) if b > 0]


class SpeculativeDecoder:
    """Exact speculative sampling with a target Engine and any draft (lib.decoding.speculative.drafts)."""

    def __init__(self, target: Engine, draft, cfg: SamplingConfig, seed: int, keep_top: int = 0):
        self.target, self.draft, self.cfg, self.keep_top = target, draft, cfg, keep_top
        self.gen = torch.Generator().manual_seed(int(seed))
        self.committed: list[int] = []
        self.cache = None
        self.pending_logits = None      # (V,) the target's logits after the pending token, when known

    def start(self, prompt_ids, primed: tuple[KVCache, torch.Tensor] | None = None) -> float:
        """Prefill the target with every prompt token but the last (the pending one).
        `primed`: (a cache that holds every prompt token, the target's logits (V,) after the
        prompt), e.g. `EarlyExits.for_target()`: nothing is computed; the first block then
        verifies its drafts without feeding the pending token again."""
        t0 = time.perf_counter()
        self.committed = list(prompt_ids)
        if primed is not None and primed[0].length(0) == len(self.committed):
            self.cache, self.pending_logits = primed[0].clone(), primed[1]
        else:
            self.cache, self.pending_logits = self.target.new_cache(capacity=len(self.committed) + 128), None
            if len(self.committed) > 1:       # the loop's own prefill (no LM head: its logits are unused)
                prefill(self.target, torch.tensor([self.committed[:-1]], device=self.target.device), self.cache,
                        head=False)
        self.draft.reset(self.committed)
        return time.perf_counter() - t0

    def _verify(self, drafts: list[int]) -> torch.Tensor:
        """The target's logits (g+1, V) at the pending token and at each draft, in one forward
        (the pending token's row comes from `start(primed=...)` when it is known)."""
        known, self.pending_logits = self.pending_logits, None
        fed = drafts if known is not None else [self.committed[-1]] + drafts
        rows = [] if known is None else [known[None].float()]
        if fed:
            ids = torch.tensor([fed], device=self.target.device)                          # (1, g+1 or g)
            rows.append(self.target.forward(ids, self.cache, logits="all")[0].float().cpu())
        return torch.cat(rows)                                                              # (g+1, V)

    def step(self, gamma: int) -> BlockRecord:
        """One block: propose up to gamma tokens, verify them in one target forward, roll back."""
        t0 = time.perf_counter()
        drafts, q = self.draft.propose(self.committed, gamma, self.cfg, self.gen)  # (g,), (g, V)
        t1 = time.perf_counter()
        g = len(drafts)
        n_before = len(self.committed) - 1           # the cache's entries before the pending token
        logits = self._verify(drafts)                                                  # (g+1, V)
        t2 = time.perf_counter()
        p = torch.stack([run_pipeline(logits[i], self.cfg).probs for i in range(g + 1)])  # (g+1, V)

        accepted, token, from_residual, draws = 0, None, False, []
        for i in range(g):
            v = accept_or_resample(p[i], q[i], drafts[i], self.gen)
            draws.append(float(v.u[0]))
            if not bool(v.accepted[0]):      # first rejection: the output came from the residual
                token, from_residual = int(v.out[0]), True
                break
            accepted += 1
        if token is None:                    # all g accepted: a bonus token from p_{g+1}
            token = sample_next(p[g], self.gen)

        self.committed += drafts[:accepted] + [token]
        self.cache.crop(rollback_length(n_before, accepted))   # keep pending + accepted drafts
        self.draft.rollback(len(self.committed))
        rec = BlockRecord(
            proposals=list(drafts), q_prob=[float(q[i, d]) for i, d in enumerate(drafts)],
            p_prob=[float(p[i, d]) for i, d in enumerate(drafts)],
            alpha=[float(torch.minimum(p[i], q[i]).sum()) for i in range(g)],
            accepted=accepted, token=token, from_residual=from_residual,
            draft_s=t1 - t0, target_s=t2 - t1, u=draws)
        if self.keep_top:
            rec.top_p = [_top(p[i], self.keep_top) for i in range(g + 1)]
            rec.top_q = [_top(q[i], self.keep_top) for i in range(g)]
            if from_residual:
                rec.top_r = _top(residual(p[accepted], q[accepted]), self.keep_top)
        return rec


def speculative_generate(target: Engine, draft, prompt_ids, max_new_tokens: int, gamma: int,
                         cfg: SamplingConfig = SamplingConfig(0.0), seed: int = 0,
                         eos_ids: tuple[int, ...] = (), keep_top: int = 0) -> SpecRun:
    """Generate up to max_new_tokens with speculative decoding; stops at EOS."""
    dec = SpeculativeDecoder(target, draft, cfg, seed, keep_top)
    run = SpecRun(list(prompt_ids), draft_name=getattr(draft, "name", ""), gamma=gamma)
    run.prefill_s = dec.start(prompt_ids)
    t0 = time.perf_counter()
    while len(run.new_ids) < max_new_tokens:
        rec = dec.step(min(gamma, max_new_tokens - len(run.new_ids) - 1))
        run.blocks.append(rec)
        out = rec.proposals[:rec.accepted] + [rec.token]
        for tok in out:
            run.new_ids.append(tok)
            if tok in eos_ids or len(run.new_ids) >= max_new_tokens:
                run.wall_s = time.perf_counter() - t0
                return run
    run.wall_s = time.perf_counter() - t0
    return run


@dataclass
class PlainRun:
    new_ids: list[int]
    prefill_s: float
    wall_s: float                   # decode time after prefill
    target_calls: int


class _BaselineStepper:
    """The dense stepper with speculative decoding's prefill split (prompt minus its last token;
    that last token starts decoding, as the verifier does), timing the prefill, counting calls."""

    def __init__(self, target: Engine, capacity: int):
        self.target, self.cache, self.calls = target, target.new_cache(capacity=capacity), 0
        self.prefill_s = 0.0

    def _one(self, token: int) -> torch.Tensor:
        self.calls += 1
        return decode_one_token(self.target, token, self.cache)[0]

    def prefill(self, ids: list[int]) -> torch.Tensor:
        t0 = time.perf_counter()
        if len(ids) > 1:                      # as the verifier's start: no LM head, its logits are unused
            prefill(self.target, torch.tensor([ids[:-1]], device=self.target.device), self.cache, head=False)
        self.prefill_s = time.perf_counter() - t0
        return self._one(ids[-1])

    def decode(self, token: int) -> torch.Tensor:
        return self._one(token)


def plain_decode(target: Engine, prompt_ids, max_new_tokens: int, cfg: SamplingConfig = SamplingConfig(0.0),
                 seed: int = 0, eos_ids: tuple[int, ...] = ()) -> PlainRun:
    """The baseline: one target forward per token through the one decode loop
    (lib/decoding/generate.py), the same pipeline and prefill split as the speculative run."""
    stepper = _BaselineStepper(target, capacity=len(prompt_ids) + max_new_tokens + 8)
    t0 = time.perf_counter()
    new = decode_loop(stepper, list(prompt_ids), cfg, seed, max_new_tokens, eos_ids)
    wall = time.perf_counter() - t0 - stepper.prefill_s
    return PlainRun(new, stepper.prefill_s, wall, stepper.calls)


def one_block(target: Engine, draft, prompt_ids, gamma: int, cfg: SamplingConfig, seed: int,
              keep_top: int = 5, primed: tuple[KVCache, torch.Tensor] | None = None) -> BlockRecord:
    """A single draft-and-verify block right after the prompt, with p's and q's top tokens
    (`primed`: as in SpeculativeDecoder.start)."""
    dec = SpeculativeDecoder(target, draft, cfg, seed, keep_top)
    dec.start(prompt_ids, primed)
    return dec.step(gamma)


def early_exit_block(target: Engine, prompt_ids, n_layers: int, gamma: int, cfg: SamplingConfig,
                     seed: int, _exits=None) -> BlockRecord:
    """One block after the prompt with the target's own first n_layers as the draft.
    `_exits`: drafts.early_exit_logits(target, prompt_ids), if the caller has it: its one forward
    over the prompt then serves both the target's and the draft's prefill (and the first
    proposal and the pending token's check need no forward): the same block, ~2 forwards fewer."""
    from lib.decoding.speculative.drafts import EngineDraft

    draft = EngineDraft(target, n_layers, after_prompt=None if _exits is None else _exits.for_draft(n_layers))
    return one_block(target, draft, list(prompt_ids), gamma, cfg, seed,
                     primed=None if _exits is None else _exits.for_target())


def early_exit_greedy(target: Engine, prompt_ids, n_layers: int, gamma: int, n_new: int,
                      eos_ids: tuple[int, ...] = ()) -> SpecRun:
    """Greedy speculative decoding with the early-exit draft (to compare with plain greedy)."""
    from lib.decoding.speculative.drafts import EngineDraft

    return speculative_generate(target, EngineDraft(target, n_layers), list(prompt_ids), n_new, gamma,
                                SamplingConfig(0.0), 0, eos_ids)
