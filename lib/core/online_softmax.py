"""Softmax statistics over a vocabulary too big to hold at once, one chunk of logits at a time.

The LM head's logits for many rows are (rows, 262,144): 1 MB per row in float32, so a streaming
evaluation's 512 rows would be half a gigabyte, and float64 twice that. Everything these pages
need from them reduces over the vocabulary, so it can be computed chunk by chunk as the head
produces the logits (lib/core/vocab_matrix.py yields them): the largest logit so far and the sum
of exp(logit - it), rescaled whenever a larger one comes ("online softmax", the trick
FlashAttention uses across keys), plus whatever the target token's or the argmax's chunk holds.

    running_argmax      the argmax over the vocabulary (ties to the first token)
    running_nll         -ln softmax(logits)[target]
    running_comparison  KL(p_ref || p_run), both NLLs and top-1 agreement of K runs against one
"""
from __future__ import annotations

import torch


def running_argmax(chunks, n_rows: int, transform=None) -> torch.Tensor:
    """The argmax over the vocabulary, one chunk of logits at a time: `chunks` yields
    (first token id, logits (n_rows, c)); `transform` (e.g. a soft cap) is applied to each
    chunk first. The same ids as torch.argmax over the whole (n_rows, V) logits (its first
    index of the maximum: a later chunk wins only if strictly larger), without holding them."""
    best = torch.full((n_rows,), float("-inf"))                               # (N,)
    ids = torch.zeros(n_rows, dtype=torch.long)                               # (N,)
    for start, y in chunks:
        v, i = (transform(y) if transform is not None else y).max(-1)        # (N,), (N,)
        better = v > best
        best, ids = torch.where(better, v, best), torch.where(better, i + start, ids)
    return ids


def running_nll(chunks, targets: torch.Tensor, transform=None) -> torch.Tensor:
    """-ln softmax(logits)[target] per row, one chunk of logits at a time: `chunks` yields
    (first token id, logits (N, c)) and targets is (N,) token ids. A running logsumexp (the
    largest logit so far and the sum of exp(logit - it), rescaled when a larger one comes) and
    each row's target logit, picked from the chunk that holds it: the (N, V) logits never exist
    at once, so many rows share one pass over the matrix. Equals
    logsumexp(logits) - logits[target] to float32 rounding (the sums are kept in float64)."""
    n, dev = targets.shape[0], targets.device
    top = torch.full((n,), float("-inf"), device=dev)                         # (N,) largest so far
    total = torch.zeros(n, dtype=torch.float64, device=dev)                   # (N,) sum exp(y - top)
    picked = torch.zeros(n, device=dev)                                       # (N,) the target's logit
    for start, y in chunks:
        y = transform(y) if transform is not None else y                     # (N, c)
        new_top = torch.maximum(top, y.max(-1).values)
        total = total * torch.exp(top - new_top).double() + torch.exp(y - new_top[:, None]).sum(-1).double()
        top = new_top
        here = (targets >= start) & (targets < start + y.shape[1])
        if here.any():
            picked[here] = y[here, targets[here] - start]
    return (top.double() + torch.log(total)).float() - picked


def running_comparison(chunks, n: int, targets: torch.Tensor, transform=None):
    """One reference run against K other runs of the same n positions, one chunk of logits at
    a time: `chunks` yields (first token id, logits ((K + 1) n, c)), the reference's n rows
    first, then each run's n rows; targets (n,) are the tokens each position should predict.
    Returns, with p = softmax(reference logits) and q = softmax(a run's logits):

        kl      (K, n)  KL(p || q) = sum_v p_v (y_v - z_v) - lse(y) + lse(z)   (y, z: the logits)
        nll_ref (n,)    -ln p[target]           nll (K, n)  -ln q[target]
        agree   (K, n)  argmax p == argmax q (ties to the first token, as torch.argmax)

    Running sums in float64 (each chunk's logits converted; exp(y - the running maximum),
    rescaled when a larger one comes), so the (rows, V) logits and probabilities never exist:
    the same numbers as log_softmax over the whole float64 logits, to float64 rounding."""
    n_runs = None
    for start, y in chunks:
        y = (transform(y) if transform is not None else y).double()            # (R, c)
        if n_runs is None:
            R = y.shape[0]
            n_runs = R // n - 1
            top = torch.full((R,), float("-inf"), dtype=torch.float64)          # running max per row
            total = torch.zeros(R, dtype=torch.float64)                          # sum exp(y - top)
            cross = torch.zeros(n_runs, n, dtype=torch.float64)                  # sum exp(y_ref - top_ref) (y_ref - z)
            best = torch.full((R,), float("-inf"), dtype=torch.float64)
            best_id = torch.zeros(R, dtype=torch.long)
            picked = torch.zeros(R, dtype=torch.float64)
            tgt = targets.repeat(n_runs + 1)                                      # (R,)
        new_top = torch.maximum(top, y.max(-1).values)
        rescale = torch.exp(top - new_top)                                       # 0 on the first chunk
        e = torch.exp(y - new_top[:, None])                                      # (R, c)
        total = total * rescale + e.sum(-1)
        ref, runs = y[:n], y[n:].view(n_runs, n, -1)                             # (n, c), (K, n, c)
        cross = cross * rescale[:n] + (e[:n] * (ref - runs)).sum(-1)
        top = new_top
        v, i = y.max(-1)
        better = v > best
        best, best_id = torch.where(better, v, best), torch.where(better, i + start, best_id)
        here = (tgt >= start) & (tgt < start + y.shape[1])
        if here.any():
            picked[here] = y[here, tgt[here] - start]
    lse = top + torch.log(total)                                                 # (R,)
    lse_ref, lse_runs = lse[:n], lse[n:].view(n_runs, n)
    kl = (cross / total[:n] - lse_ref + lse_runs).clamp_min(0)
    nll = lse - picked
    return kl, nll[:n], nll[n:].view(n_runs, n), best_id[n:].view(n_runs, n) == best_id[:n]
