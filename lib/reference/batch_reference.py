"""Continuous batching (lib.decoding.batching.batched_forward) against the engine alone.

`batched_vs_alone(engine, prompts)` runs the prompts (different lengths) as ONE padded batch
through `batched_forward`, each with its own fresh cache, and each prompt again by itself
through the engine's own forward (`Engine.forward`, which the model check compares with
transformers' Gemma3DecoderLayer); it returns the largest |Δ logit| of any prompt's last
position and whether every prompt's argmax agrees. A CONSISTENCY check of the scheduler's
padding, positions and row bookkeeping against the engine (the engine itself is proved
elsewhere): padding read as a token, a row read at the padded end or a position offset
shows as a large difference.

The "alone" side need not be a forward of its own: a prompt's first 16 tokens alone are, by
causality, the first 16 positions of the whole prompt alone, which paged-attention's run has
already computed (its contiguous recompute, B = 1 on a plain KVCache: no padding, no
BatchOfCaches, no positions tensor, none of the code under test). Reading that row instead of
running the four prompts again saves four weight passes (issue 32 item 6) and changes nothing
the comparison can see: a scheduler bug still moves the batched side away from it, and an
engine bug that breaks causality would move the two apart too (red, never a false green).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.decoding import batching


@dataclass(frozen=True)
class BatchComparison:
    n_prompts: int
    lengths: tuple[int, ...]
    max_abs_diff: float          # max over prompts of max |batched logit - alone logit| (last position)
    argmax_equal: bool


MAX_TOKENS = 16      # each prompt's first 16 tokens: rows of different lengths stay, the cost stays small


def batched_vs_alone(engine, prompts: tuple[tuple[int, ...], ...], alone_hidden: tuple | None = None,
                     max_tokens: int = MAX_TOKENS) -> BatchComparison:
    """prompts: token ids of each request, each cut to its first max_tokens (at least two
    lengths make padding happen). alone_hidden: per prompt, None or the final (normed) hidden
    states (n_i, D) of the WHOLE prompt run alone through `Engine.forward` on a plain KVCache
    (paged-attention's run keeps them from its contiguous recompute: PagedRun.prompt_hidden);
    the row at the cut's last token is, by causality, that cut prompt alone, so no second
    forward is needed. A prompt without one is run alone here."""
    prompts = tuple(tuple(p)[:max_tokens] for p in prompts)
    given = alone_hidden or (None,) * len(prompts)
    ids = [torch.tensor([list(p)], device=engine.device) for p in prompts]            # (1, T_i) each
    got = batching.batched_forward(engine, [(x, engine.new_cache(capacity=x.shape[1])) for x in ids])
    # each prompt alone through the engine (or its row of the given alone run); the LM head then
    # runs once over the four last rows (its pass over the 262k-row vocabulary costs more than a
    # 16-token forward)
    last = torch.cat([_alone_last(engine, x, h) for x, h in zip(ids, given)])             # (B, D)
    alone = engine.head(last[None])[0].split(1)                                        # (1, V) each
    diff = max(float((g[0, -1].float() - a[0].float()).abs().max()) for g, a in zip(got, alone))
    same = all(int(g[0, -1].argmax()) == int(a[0].argmax()) for g, a in zip(got, alone))
    return BatchComparison(len(prompts), tuple(len(p) for p in prompts), diff, same)


def _alone_last(engine, ids: torch.Tensor, hidden: torch.Tensor | None) -> torch.Tensor:
    """ids (1, T): the final hidden state of its last token alone, (1, D): read from `hidden`
    (n >= T, D) of a longer alone run of the same tokens, or from a forward of its own."""
    T = ids.shape[1]
    if hidden is None:
        return engine.forward(ids, engine.new_cache(capacity=T), logits="none")[:, -1]
    if hidden.shape[0] < T:
        raise ValueError(f"an alone run of {hidden.shape[0]} tokens cannot stand for a prompt of {T}")
    return hidden[T - 1:T].to(device=engine.device, dtype=engine.dtype)
