"""transformers' logits processors as the reference for lib.decoding.sampling.

Each function runs one of our stages and the matching transformers processor on the same
logits and returns how far apart they are (0 = identical). The pages show these numbers in
"Check it yourself"; tests/model/test_sampling_parity_real.py asserts them on real logits.
"""
from __future__ import annotations

import torch

from lib.decoding import sampling


def _row(logits: torch.Tensor) -> torch.Tensor:
    return logits.float().reshape(1, -1).clone()                                  # (1, V)


def top_k_mismatches(logits: torch.Tensor, ks) -> int:
    """Tokens whose kept/removed status differs from TopKLogitsWarper(k), summed over ks."""
    from transformers import TopKLogitsWarper

    bad = 0
    for k in ks:
        theirs = torch.isfinite(TopKLogitsWarper(int(k))(None, _row(logits)))[0]
        bad += int((theirs != sampling.top_k_mask(logits.float(), int(k))).sum())
    return bad


def top_p_mismatches(logits: torch.Tensor, ps) -> int:
    """Tokens whose kept/removed status differs from TopPLogitsWarper(p), summed over ps."""
    from transformers import TopPLogitsWarper

    bad = 0
    for p in ps:
        theirs = torch.isfinite(TopPLogitsWarper(float(p))(None, _row(logits)))[0]
        bad += int((theirs != sampling.top_p_mask(logits.float(), float(p))).sum())
    return bad


def min_p_mismatches(logits: torch.Tensor, min_ps) -> int:
    """Tokens whose kept/removed status differs from MinPLogitsWarper(min_p), summed."""
    from transformers import MinPLogitsWarper

    bad = 0
    for mp in min_ps:
        theirs = torch.isfinite(MinPLogitsWarper(float(mp))(None, _row(logits)))[0]
        bad += int((theirs != sampling.min_p_mask(logits.float(), float(mp))).sum())
    return bad


def sequence_bias_max_diff(logits: torch.Tensor, sequence_bias, context=()) -> float:
    """max |our biased logits - SequenceBiasLogitsProcessor's| (inf positions must match
    exactly; they count as 0 difference when both are -inf, as inf otherwise)."""
    from transformers import SequenceBiasLogitsProcessor

    proc = SequenceBiasLogitsProcessor([[list(seq), float(b)] for seq, b in sequence_bias])
    ctx = torch.tensor([list(context) or [0]])
    theirs = proc(ctx, _row(logits))[0]
    ours = sampling.apply_sequence_bias(logits.float(), sequence_bias, tuple(context) or (0,))
    same_inf = torch.isinf(theirs) & torch.isinf(ours) & (theirs == ours)
    diff = (theirs - ours).abs().masked_fill(same_inf, 0.0)
    return float(diff.max())


def pipeline_max_diff(logits: torch.Tensor, cfg: sampling.SamplingConfig) -> float:
    """max |our final probabilities - softmax(transformers' processors in the standard order
    bias -> temperature -> top-k -> top-p -> min-p)| for a sampling config (T > 0)."""
    from transformers import (MinPLogitsWarper, SequenceBiasLogitsProcessor, TemperatureLogitsWarper,
                              TopKLogitsWarper, TopPLogitsWarper)

    if cfg.greedy or cfg.order != sampling.STAGES:
        raise ValueError("the reference chain is defined for T > 0 in the standard order")
    x = _row(logits)
    pairs = [[[int(t)], float(b)] for t, b in cfg.bias]
    if pairs:
        x = SequenceBiasLogitsProcessor(pairs)(torch.tensor([[0]]), x)
    x = TemperatureLogitsWarper(float(cfg.temperature))(None, x)
    if cfg.top_k is not None:
        x = TopKLogitsWarper(int(cfg.top_k))(None, x)
    if cfg.top_p is not None:
        x = TopPLogitsWarper(float(cfg.top_p))(None, x)
    if cfg.min_p is not None:
        x = MinPLogitsWarper(float(cfg.min_p))(None, x)
    theirs = torch.softmax(x, dim=-1)[0]
    ours = sampling.run_pipeline(logits, cfg).probs
    return float((theirs - ours).abs().max())
