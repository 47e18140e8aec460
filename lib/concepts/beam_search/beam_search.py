"""Beam search with length normalization, on the engine's KV cache — transformers' rules, readable.

The running beams are one batch: row b of the KV cache is beam b. After each step the cache
rows are gathered (`KVCache.reorder`) so that row b holds the parent of the new beam b.

One step (transformers `GenerationMixin._beam_search`, v5, batch of one prompt):

    logp = log_softmax(logits)                      (B, V)   float32
    cum  = running_score[:, None] + logp            (B, V)   sum of log-probs along each path
    K    = max(2, 1 + n_end_tokens) * num_beams     candidates kept for this step
    top K of cum over all beams, best first         the step's candidates (parent, token)
    - a candidate among the first num_beams whose token ends a hypothesis (an EOS / stop token,
      or any token on the last step, max_new_tokens) becomes a FINISHED hypothesis with
            score = sum_logprob / L ** alpha,   L = generated tokens incl. the end token
                                                    (the prompt is NOT counted)
    - the first num_beams candidates that do not end become the next running beams (KEPT);
      the rest are PRUNED (an end token ranked below num_beams is dropped, not finished).
    - the finished pool keeps the num_beams best scores.

Stopping (checked after every step, L_run = tokens generated so far):
    max_new_tokens reached; or no running beam is left; or early_stopping=True and num_beams hypotheses finished; or the
    pool is full and best_running / L_best ** alpha <= the pool's worst score, where
    L_best = L_run, except early_stopping="never" with alpha > 0: L_best = max_new_tokens.

One beam is greedy search, as in transformers (`generate(num_beams=1)` runs greedy decoding):
K = 1, the argmax of each step; the first end token finishes the one hypothesis and ends the
search (for every alpha and early_stopping).

Which beams run never depends on alpha: alpha only decides which finished hypotheses win and
(through the stop rule) after how many steps the search stops. So one search run to
max_new_tokens (`run_to_max=True`) records everything needed to answer for ANY alpha and
early_stopping without calling the model again: `select(record, alpha, early_stopping)`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from lib.core.engine import Engine
from lib.decoding.generate import decode_one_token, prefill

KEPT, FINISHED, PRUNED = "kept", "finished", "pruned"
EARLY_STOPPING = (False, True, "never")


@dataclass(frozen=True)
class Candidate:
    """One of the K continuations a step considered."""
    step: int            # 0-based; its token is generated token number step + 1
    rank: int            # 0..K-1 by cumulative log-prob at this step (0 = best)
    parent: int          # index in BeamRecord.candidates of the beam it extends; -1 = the prompt
    token: int
    logprob: float       # log p(token | prompt + path so far)
    cum_logprob: float   # sum of the log-probs along the path, this token included
    ends: bool           # its token is an end token (EOS or stop token)
    fate: str            # KEPT (a running beam), FINISHED (a hypothesis), PRUNED


@dataclass(frozen=True)
class Hypothesis:
    """A finished sequence. Its score at any alpha is sum_logprob / length ** alpha."""
    tokens: tuple[int, ...]   # generated tokens, the end token included
    sum_logprob: float        # float32 sum of the tokens' log-probs (transformers' running score)
    step: int                 # the step it finished at
    node: int                 # index of its last token in BeamRecord.candidates
    by_length: bool           # True: cut at max_new_tokens; False: ended with an end token

    @property
    def length(self) -> int:
        """L in the length penalty: generated tokens, end token included, prompt excluded."""
        return len(self.tokens)


@dataclass
class BeamRecord:
    prompt_ids: tuple[int, ...]
    num_beams: int
    max_new_tokens: int
    end_ids: tuple[int, ...]
    run_to_max: bool
    candidates: list[Candidate] = field(default_factory=list)
    hypotheses: list[Hypothesis] = field(default_factory=list)
    best_running: list[float] = field(default_factory=list)  # top running score after each step
    n_steps: int = 0


def normalized_score(sum_logprob: float, length: int, alpha: float) -> float:
    """sum_logprob / length ** alpha, rounded exactly as transformers computes it (a float32
    tensor divided by a Python float: both float32, one float32 division)."""
    return float(np.float32(sum_logprob) / np.float32(length ** alpha))


class FinishedPool:
    """transformers' finished-beam bookkeeping for one alpha: the num_beams best scores so far
    and the 'can a running beam still beat them' flag that ends the search."""

    def __init__(self, num_beams: int, alpha: float, early_stopping, max_new_tokens: int):
        if early_stopping not in EARLY_STOPPING:
            raise ValueError(f"early_stopping must be one of {EARLY_STOPPING}, got {early_stopping!r}")
        self.num_beams, self.alpha = num_beams, float(alpha)
        self.early_stopping, self.max_new_tokens = early_stopping, max_new_tokens
        self.entries: list[tuple[float, int]] = []   # (score, hypothesis index), best first
        self.improvable = True

    def add(self, index: int, hyp: Hypothesis) -> None:
        score = normalized_score(hyp.sum_logprob, hyp.length, self.alpha)
        self.entries.append((score, index))
        self.entries.sort(key=lambda e: -e[0])       # stable: earlier entries win ties
        del self.entries[self.num_beams:]

    @property
    def full(self) -> bool:
        return len(self.entries) == self.num_beams

    def stop_after_step(self, n_generated: int, best_running: float, last_step: bool) -> bool:
        """Update the improvement flag after a step that left `n_generated` tokens per beam."""
        if self.early_stopping == "never" and self.alpha > 0:
            best_len = self.max_new_tokens
        else:
            best_len = n_generated
        if self.full:
            best_possible = normalized_score(best_running, best_len, self.alpha)
            self.improvable = self.improvable and best_possible > self.entries[-1][0]
        return last_step or not self.improvable or (self.early_stopping is True and self.full)


def beam_search(engine: Engine, prompt_ids, num_beams: int, max_new_tokens: int,
                length_penalty: float = 1.0, early_stopping=False, eos_ids=(),
                run_to_max: bool = False, on_step: Callable[[BeamRecord], None] | None = None,
                logits_table: dict | None = None) -> BeamRecord:
    """Beam search from `prompt_ids`; returns the full record (see the module docstring).

    Stops where transformers would for (length_penalty, early_stopping), or only at
    max_new_tokens with run_to_max=True (then `select` answers for every alpha).
    `on_step(step)` is called after every step (progress). `logits_table`, if given, receives
    every logits row the model produced, keyed by the generated tokens it followed:
    {(): prefill row (V,), (t1,): ..., (t1, t2): ...}."""
    if num_beams < 1 or max_new_tokens < 1:
        raise ValueError("num_beams and max_new_tokens must be >= 1")
    ends = tuple(sorted(set(int(e) for e in eos_ids)))
    K = 1 if num_beams == 1 else max(2, 1 + len(ends)) * num_beams   # one beam: greedy (as generate)
    rec = BeamRecord(tuple(int(i) for i in prompt_ids), num_beams, max_new_tokens, ends, run_to_max)
    pool = FinishedPool(num_beams, length_penalty, early_stopping, max_new_tokens)
    end_set = torch.tensor(ends, dtype=torch.long)

    logits, cache = prefill(engine, torch.tensor([rec.prompt_ids], device=engine.device))  # (1, V)
    running = torch.zeros(1)                    # (B,) cumulative log-prob of each running beam
    beam_nodes = [-1]                           # (B,) record index of each beam's last token
    beam_tokens: list[tuple[int, ...]] = [()]   # (B,) tokens of each beam
    for step in range(max_new_tokens):
        logits = logits.float().cpu()                                   # (B, V)
        if logits_table is not None:
            logits_table.update(zip(beam_tokens, logits))
        logp = torch.log_softmax(logits, dim=-1)                        # (B, V)
        V = logp.shape[-1]
        cum = (logp + running[:, None]).reshape(-1)                     # (B*V,)
        top_cum, top_idx = torch.topk(cum, K)                           # (K,)
        parent, token = top_idx // V, top_idx % V                       # (K,)
        last = step == max_new_tokens - 1
        ends_here = torch.isin(token, end_set) | last                   # (K,)
        kept: list[int] = []
        for r in range(K):
            b, tok = int(parent[r]), int(token[r])
            is_end = tok in ends
            if ends_here[r] and r < num_beams:
                fate = FINISHED
            elif not ends_here[r] and len(kept) < num_beams:
                fate = KEPT
                kept.append(r)
            else:
                fate = PRUNED
            rec.candidates.append(Candidate(step, r, beam_nodes[b], tok, float(logp[b, tok]),
                                            float(top_cum[r]), is_end, fate))
            if fate == FINISHED:
                hyp = Hypothesis(beam_tokens[b] + (tok,), float(top_cum[r]), step,
                                 len(rec.candidates) - 1, by_length=not is_end)
                rec.hypotheses.append(hyp)
                pool.add(len(rec.hypotheses) - 1, hyp)
        base = len(rec.candidates) - K
        best_running = float(top_cum[kept[0]]) if kept else -1e9
        rec.best_running.append(best_running)
        rec.n_steps = step + 1
        if on_step:
            on_step(rec)
        if pool.stop_after_step(step + 1, best_running, last) and (last or not run_to_max) or not kept:
            break
        idx = torch.tensor(kept)
        cache.reorder(parent[idx].to(engine.device))
        beam_nodes = [base + r for r in kept]
        beam_tokens = [beam_tokens[int(parent[r])] + (int(token[r]),) for r in kept]
        running = top_cum[idx]                                          # (B,)
        logits = decode_one_token(engine, token[idx][:, None].to(engine.device), cache)   # (B, V)
    return rec


@dataclass(frozen=True)
class Selection:
    """What transformers returns for one (alpha, early_stopping), read off a record."""
    alpha: float
    early_stopping: object
    best: int                  # index in record.hypotheses of the returned sequence
    score: float               # its normalized score (transformers' `sequences_scores`)
    pool: tuple[int, ...]      # the finished hypotheses transformers holds at the end, best first
    stop_step: int             # the last step the search runs (0-based)
    scores: tuple[float, ...]  # every recorded hypothesis' normalized score at alpha


def select(record: BeamRecord, alpha: float, early_stopping=False) -> Selection:
    """Replay transformers' finishing and stopping rules on a record for another alpha
    (no model call). Needs a record that ran at least as many steps as that search would."""
    pool = FinishedPool(record.num_beams, alpha, early_stopping, record.max_new_tokens)
    by_step: dict[int, list[int]] = {}
    for i, h in enumerate(record.hypotheses):
        by_step.setdefault(h.step, []).append(i)
    stop = record.n_steps - 1
    for step in range(record.n_steps):
        for i in by_step.get(step, []):
            pool.add(i, record.hypotheses[i])
        last = step == record.max_new_tokens - 1
        if pool.stop_after_step(step + 1, record.best_running[step], last):
            stop = step
            break
    else:
        if record.n_steps < record.max_new_tokens:
            raise ValueError("the record stopped before this search would; run it with run_to_max=True")
    scores = tuple(normalized_score(h.sum_logprob, h.length, alpha) for h in record.hypotheses)
    best_score, best = pool.entries[0]
    return Selection(float(alpha), early_stopping, best, best_score,
                     tuple(i for _, i in pool.entries), stop, scores)


def sequence_logprob(engine: Engine, prompt_ids, tokens) -> float:
    """The model's log-probability of `tokens` after `prompt_ids`, from ONE teacher-forced
    forward pass (independent of the search): sum_t log p(tokens[t] | prompt, tokens[:t])."""
    ids = torch.tensor([list(prompt_ids) + list(tokens)], device=engine.device)   # (1, P + L)
    P, L = len(prompt_ids), len(tokens)
    logits = engine.forward(ids, engine.new_cache(capacity=P + L), logits=slice(P - 1, P - 1 + L))  # (1, L, V)
    logp = torch.log_softmax(logits[0].float().cpu(), dim=-1)                        # (L, V)
    return float(logp[torch.arange(L), torch.tensor(list(tokens))].double().sum())


def sequence_logprobs(engine: Engine, prompt_ids, sequences) -> tuple[float, ...]:
    """sequence_logprob for several token sequences (a tuple of tuples)."""
    return tuple(sequence_logprob(engine, prompt_ids, seq) for seq in sequences)
