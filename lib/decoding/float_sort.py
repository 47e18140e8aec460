"""Sorting a whole vocabulary of logits fast: sort the floats' bit patterns as integers.

A 262,144-entry float32 sort takes ~23 ms on this CPU; the same data viewed as int32 sorts in
~1.5 ms (PyTorch uses a radix sort for integers). IEEE-754 floats order like integers once
the negative ones have their 31 magnitude bits flipped:

    key = bits            if the sign bit is 0   (+0.0, positive numbers, +inf)
    key = bits ^ 0x7FFFFFFF  if the sign bit is 1  (more negative -> smaller key)

so sorting the keys sorts the floats: the same sorted values, in the same order (equal values
are equal keys, so `stable=True` keeps their original order too). float64 uses int64 keys.
Only -0.0 and +0.0 differ (-0.0 first); NaN keys sort past +inf / -inf by their bits.

Descending: PyTorch's fast path is the ascending sort (~2.6 ms; descending ~22 ms), so a
descending sort sorts the complemented keys ~key = -key - 1 ascending: larger floats get
smaller keys, equal floats stay equal. Ties therefore always keep their original order
(a valid answer for `stable=False` too).
"""
from __future__ import annotations

import torch

_INT = {torch.float32: (torch.int32, 0x7FFFFFFF), torch.float64: (torch.int64, 0x7FFFFFFFFFFFFFFF)}


def order_keys(x: torch.Tensor) -> torch.Tensor:
    """Integers that sort exactly like the floats x (float32 -> int32, float64 -> int64)."""
    int_dtype, magnitude = _INT[x.dtype]
    bits = x.contiguous().view(int_dtype)
    return torch.where(bits < 0, bits ^ magnitude, bits)


def sort_floats(x: torch.Tensor, descending: bool = False, stable: bool = False):
    """torch.sort(x, dim=-1) for float32/float64 x, via integer keys: the same (values, indices)
    result type as torch.sort."""
    if x.dtype not in _INT:
        return torch.sort(x, dim=-1, descending=descending, stable=stable)
    keys = order_keys(x)
    if descending:
        keys = torch.bitwise_not(keys)                  # ascending on ~key = descending on key
    idx = torch.sort(keys, dim=-1, stable=True).indices
    return torch.return_types.sort((x.gather(-1, idx), idx))
