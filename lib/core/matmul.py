"""Matrix products of several rows on the CPU: oneDNN's kernels instead of torch.matmul's BLAS.

The engine keeps every weight as W^T, shape (in, out), and for one decoding token `x @ W^T`
is a matrix-vector product that streams the weight once (lib/core/engine.py). With several
rows (thirty sessions' batched decoding step, a prompt, a speculative verify block, the LM
head of a batch) the product is compute-bound, and there oneDNN (PyTorch's own CPU kernel
library, the one torch.compile uses) is 2-3x faster than torch.matmul's default BLAS on this
project's 2-core AMD host. Measured side by side (medians, ms, one product 640 -> 4096 / the
four products of one Gemma 3 270M layer):

    rows      1            2            8            60           400
    matmul    0.23 / 0.59  - / 1.69     1.11 / -     3.53 / 6.9   13.8 / 31
    oneDNN    0.72 / 0.93  - / 1.38     0.48 / -     1.40 / 3.1   7.5 / 14.4

One row keeps the plain product. The weight goes to oneDNN as a transposed view of W^T (no
copy). The two round differently (float32 sums of the same products in another order), so a
row batched with others gets logits that differ from its own alone by up to ~4e-5: the sampler is
built for that (lib/decoding/sampling.sample_next).
"""
from __future__ import annotations

from typing import List, Optional, Union

import torch

MANY_ROWS = 2             # from this many rows, products go to oneDNN


def onednn_linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """oneDNN's float32 x (N, in) @ W^T for W (out, in); W may be a transposed view (no copy)."""
    no_scalars: List[Optional[Union[int, float, complex]]] = []              # the op's `Scalar?[]`
    return torch.ops.mkldnn._linear_pointwise(x, w, None, "none", no_scalars, "")


def _onednn_works() -> bool:
    """Does this PyTorch build run onednn_linear (as used: on a transposed view)?"""
    try:
        onednn_linear(torch.ones(2, 3), torch.ones(3, 4).t())
        return torch.backends.mkldnn.is_available()
    except Exception:  # noqa: BLE001 - any failure: the default product is used
        return False


ONEDNN_AVAILABLE = _onednn_works()


def onednn_suits(rows: torch.Tensor, onednn: bool = ONEDNN_AVAILABLE, many_rows: int = MANY_ROWS) -> bool:
    """Do these rows (N, in) go to oneDNN: at least MANY_ROWS of them, float32, on the CPU?"""
    return onednn and rows.shape[0] >= many_rows and rows.dtype == torch.float32 and rows.device.type == "cpu"


def rows_times(x: torch.Tensor, w_t: torch.Tensor, onednn: bool = ONEDNN_AVAILABLE,
               many_rows: int = MANY_ROWS) -> torch.Tensor:
    """x (..., in) @ w_t (in, out) -> (..., out): oneDNN for several float32 rows on the CPU,
    torch.matmul otherwise (one row, another dtype or device). TorchScript compiles it too
    (lib/core/layer.py, lib/core/q8_rows.py), and reads no global: hence the parameters whose
    defaults are this build's, here and in onednn_suits."""
    rows = x.reshape(-1, x.shape[-1])                                        # (N, in)
    if onednn_suits(rows, onednn, many_rows) and w_t.dtype == torch.float32:
        return onednn_linear(rows, w_t.t()).unflatten(0, x.shape[:-1])
    return x @ w_t
