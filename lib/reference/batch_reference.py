"""Continuous batching (lib.decoding.batching.batched_forward) against the engine alone.

`batched_vs_alone(engine, prompts)` runs the prompts (different lengths) as ONE padded batch
through `batched_forward`, each with its own fresh cache, and each prompt again by itself
through the engine's own forward (`Engine.forward`, which the model check compares with
transformers' Gemma3DecoderLayer); it returns the largest |Δ logit| of any prompt's last
position and whether every prompt's argmax agrees. A CONSISTENCY check of the scheduler's
padding, positions and row bookkeeping against the engine (the engine itself is proved
elsewhere): padding read as a token, a row read at the padded end or a position offset
shows as a large difference.
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


def batched_vs_alone(engine, prompts: tuple[tuple[int, ...], ...], max_tokens: int = MAX_TOKENS) -> BatchComparison:
    """prompts: token ids of each request, each cut to its first max_tokens (at least two
    lengths make padding happen)."""
    prompts = tuple(tuple(p)[:max_tokens] for p in prompts)
    ids = [torch.tensor([list(p)], device=engine.device) for p in prompts]            # (1, T_i) each
    got = batching.batched_forward(engine, [(x, engine.new_cache(capacity=x.shape[1])) for x in ids])
    # each prompt alone through the engine; the LM head then runs once over the four last rows
    # (its pass over the 262k-row vocabulary costs more than a 16-token forward)
    last = torch.cat([engine.forward(x, engine.new_cache(capacity=x.shape[1]), logits="none")[:, -1]
                      for x in ids])                                                   # (B, D)
    alone = engine.head(last[None])[0].split(1)                                        # (1, V) each
    diff = max(float((g[0, -1].float() - a[0].float()).abs().max()) for g, a in zip(got, alone))
    same = all(int(g[0, -1].argmax()) == int(a[0].argmax()) for g, a in zip(got, alone))
    return BatchComparison(len(prompts), tuple(len(p) for p in prompts), diff, same)
