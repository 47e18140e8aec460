"""The Q8_0 vocabulary matrix's rows expanded to float32, and the LM head over them one chunk of
rows at a time: the loops of lib/core/vocab_matrix.Q8VocabMatrix, as functions TorchScript can
compile (typed arguments, no globals), so that a decoding step's whole LM head, ~1,500 small
tensor operations, is one call that gives the GIL up once (lib/core/one_call.py).

E (V, D) is stored as int8 values q (V, D) and one float32 scale per `group` consecutive values
of a row, scales (V, D / group): E[t, j] = scales[t, j // group] * q[t, j], exact in float32.
"""
from __future__ import annotations

import torch

from lib.core.matmul import rows_times


def expand_rows(q: torch.Tensor, scales: torch.Tensor, start: int, stop: int, out: torch.Tensor,
                group: int) -> torch.Tensor:
    """Q8_0 rows E[start:stop] as float32 (stop - start, D), written into the front of `out`:
    int8 q (V, D) times one scale per `group` values, scales (V, D / group)."""
    w = out[:stop - start]
    w.copy_(q[start:stop])                                                    # int8 -> float32, exact
    w.view(-1, q.shape[1] // group, group).mul_(scales[start:stop].unsqueeze(2))
    return w


def expanded_product(rows: torch.Tensor, q: torch.Tensor, scales: torch.Tensor, chunk: int,
                     group: int) -> torch.Tensor:
    """rows (N, D) @ E^T -> (N, V) for the Q8_0 matrix E, `chunk` rows of E expanded at a time
    into one reused buffer: Q8VocabMatrix's chunked loop, written for TorchScript."""
    V, D = q.shape[0], q.shape[1]
    y = torch.empty(rows.shape[0], V, dtype=torch.float32)                   # (N, V)
    buf = torch.empty(chunk, D, dtype=torch.float32)                          # (c, D), reused
    for s in range(0, V, chunk):
        e = min(s + chunk, V)
        y[:, s:e] = rows_times(rows, expand_rows(q, scales, s, e, buf, group).t())   # (N, e - s)
    return y


def expanded_argmax(rows: torch.Tensor, q: torch.Tensor, scales: torch.Tensor, chunk: int,
                    group: int) -> torch.Tensor:
    """argmax over the vocabulary of rows (N, D) @ E^T -> ids (N,), one expanded chunk at a
    time: online_softmax.running_argmax over Q8VocabMatrix's chunks (a later chunk wins only
    if strictly larger), written for TorchScript."""
    V, D = q.shape[0], q.shape[1]
    best = torch.full((rows.shape[0],), float("-inf"))                        # (N,)
    ids = torch.zeros(rows.shape[0], dtype=torch.long)                        # (N,)
    buf = torch.empty(chunk, D, dtype=torch.float32)                          # (c, D), reused
    for s in range(0, V, chunk):
        e = min(s + chunk, V)
        v, i = rows_times(rows, expand_rows(q, scales, s, e, buf, group).t()).max(-1)   # (N,), (N,)
        better = v > best
        best, ids = torch.where(better, v, best), torch.where(better, i + s, ids)
    return ids
