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


def _onednn_linear():
    """oneDNN's float32 x @ W^T for W (out, in), if this PyTorch build has it (else None)."""
    op = getattr(torch.ops.mkldnn, "_linear_pointwise", None) if torch.backends.mkldnn.is_available() else None
    try:
        op(torch.ones(2, 3), torch.ones(3, 4).t(), None, "none", [], "")   # as used: a transposed view
        return lambda x, w: op(x, w, None, "none", [], "")
    except Exception:  # noqa: BLE001 - any failure: the default product is used
        return None


ONEDNN_LINEAR = _onednn_linear()
ONEDNN_AVAILABLE = ONEDNN_LINEAR is not None


def onednn_suits(rows: torch.Tensor) -> bool:
    """Do these rows (N, in) go to oneDNN: at least MANY_ROWS of them, float32, on the CPU?"""
    return (ONEDNN_LINEAR is not None and rows.shape[0] >= MANY_ROWS and rows.dtype == torch.float32
            and rows.device.type == "cpu")


def rows_times(x: torch.Tensor, w_t: torch.Tensor, onednn: bool = ONEDNN_AVAILABLE,
               many_rows: int = MANY_ROWS) -> torch.Tensor:
    """x (..., in) @ w_t (in, out) -> (..., out): oneDNN for several float32 rows on the CPU,
    torch.matmul otherwise (one row, another dtype or device). TorchScript compiles it too
    (lib/core/engine.py's one-call layer), and reads no global: hence the two parameters,
    whose defaults are this build's."""
    rows = x.reshape(-1, x.shape[-1])                                        # (N, in)
    if (onednn and rows.shape[0] >= many_rows and rows.dtype == torch.float32
            and rows.device.type == "cpu" and w_t.dtype == torch.float32):
        no_scalars: List[Optional[Union[int, float, complex]]] = []          # the op's `Scalar?[]`
        y = torch.ops.mkldnn._linear_pointwise(rows, w_t.t(), None, "none", no_scalars, "")
        return y.unflatten(0, x.shape[:-1])
    return x @ w_t
