"""The quantizers checked against PyTorch's own fake quantization, with scales computed
independently in float64 (issue 32, item 2): nothing here calls lib.core.cache.quantized's
`grouped`, `quantize` or its fp16 rounding.

A b-bit symmetric quantizer of one group of values g has, by definition,

    qmax = 2^(b-1) - 1,   scale = max|g| / qmax   (float64 here),
    x_hat = clamp(round(g / scale), -qmax, qmax) * scale

`group_rows(x, granularity, group_size)` lays the values that share one scale out as the rows
of a (G, M) matrix, from the granularity's definition on x (..., N, C) (N tokens x C channels):
"tensor" one row per (..., N, C) slice, "token" one per token, "channel" one per channel of a
slice, "group" one per `group_size` consecutive channels of a token. Then

    scales64(rows, bits)       -> (G,) float64 max|row| / qmax
    fp16_up(s)                 -> s rounded UP to float16 by numpy (what the KV cache stores)
    torch_fake_quant(rows, s)  -> torch.fake_quantize_per_channel_affine on axis 0 (G, M)

`packed_report(x, packed)` compares one packed KV block (lib.core.cache.quantized.Packed) with
that reference: the stored fp16 scales against fp16_up(float64 scale), the read-back values
against PyTorch's fake quantization with those scales (share of equal values), and the worst
|read back - x| / (scale64 / 2) (round-to-nearest: <= 1, up to the fp16 rounding of the scale).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

FP16_MIN_STEP = 2.0 ** -24           # spacing of float16 subnormals: the coarsest absolute rounding


def group_rows(x: torch.Tensor, granularity: str, group_size: int) -> torch.Tensor:
    """x (..., N, C) -> (G, M): each row holds the values that share one scale."""
    if x.dim() == 1:
        x = x.reshape(1, -1)
    N, C = x.shape[-2], x.shape[-1]
    s = x.reshape(-1, N, C)                                                  # (S, N, C) slices
    if granularity == "tensor":
        return s.reshape(s.shape[0], N * C)                                  # (S, N*C)
    if granularity == "token":
        return s.reshape(-1, C)                                              # (S*N, C)
    if granularity == "channel":
        return s.transpose(1, 2).reshape(-1, N)                              # (S*C, N)
    if granularity == "group":
        return s.reshape(-1, group_size)                                     # (S*N*C/g, g)
    raise ValueError(f"unknown granularity {granularity!r}")


def qmax_of(bits: int) -> int:
    return 2 ** (bits - 1) - 1


def scales64(rows: torch.Tensor, bits: int) -> np.ndarray:
    """(G, M) -> (G,) float64 max|row| / qmax; an all-zero row gets scale 1 (any scale is exact)."""
    s = np.abs(rows.double().cpu().numpy()).max(axis=1) / qmax_of(bits)
    return np.where(s > 0, s, 1.0)


def fp16_up(s: np.ndarray) -> np.ndarray:
    """float64 scales rounded up to float16 (never below s, so no value exceeds qmax codes)."""
    h = s.astype(np.float16)
    low = h.astype(np.float64) < s
    h = np.where(low, np.nextafter(h, np.float16(np.inf)), h)
    return h.astype(np.float64)


def torch_fake_quant(rows: torch.Tensor, scale: np.ndarray, bits: int) -> torch.Tensor:
    """PyTorch's symmetric fake quantization of each row with its own scale: (G, M) float32."""
    q = qmax_of(bits)
    return torch.fake_quantize_per_channel_affine(
        rows.float().cpu(), torch.tensor(scale, dtype=torch.float32),
        torch.zeros(rows.shape[0], dtype=torch.int32), 0, -q, q)


@dataclass(frozen=True)
class QuantReport:
    scale_err: float     # max over groups of |stored - fp16_up(scale64)| / scale64 (0 when right)
    agree: float         # share of values equal to PyTorch's fake quantization
    half_step: float     # max |read back - x| / (scale64 / 2)
    n_groups: int        # scales compared (stored count differs from the reference's: inf error)


def worst(reports: list[QuantReport]) -> QuantReport:
    """The worst of several reports (largest errors, smallest agreement, groups summed)."""
    if not reports:
        return QuantReport(0.0, 1.0, 0.0, 0)
    return QuantReport(max(r.scale_err for r in reports), min(r.agree for r in reports),
                       max(r.half_step for r in reports), sum(r.n_groups for r in reports))


def compare(x: torch.Tensor, got: torch.Tensor, stored_scale: torch.Tensor | None, bits: int, granularity: str,
            group_size: int, rounded_scale: bool) -> QuantReport:
    """x: the original values; got: the app's read-back (x's shape); stored_scale: the app's
    scales (one per group, any shape) or None to skip that part; rounded_scale: the app stores
    its scales rounded up to fp16 (the KV cache) rather than in float32 (activations)."""
    rows = group_rows(x.float(), granularity, group_size)                    # (G, M)
    s64 = scales64(rows, bits)                                               # (G,)
    s_ref = fp16_up(s64) if rounded_scale else s64.astype(np.float32).astype(np.float64)
    ref = torch_fake_quant(rows, s_ref, bits)                                # (G, M)
    got_rows = group_rows(got.float(), granularity, group_size)
    agree = float((ref == got_rows).double().mean()) if got_rows.shape == ref.shape else 0.0
    err = (got_rows.double() - rows.double()).abs() / torch.tensor(s64 / 2)[:, None]
    scale_err = 0.0
    if stored_scale is not None:
        st = stored_scale.double().cpu().numpy().flatten()
        scale_err = float(np.max(np.abs(st - s_ref) / s64)) if st.shape == s_ref.shape else float("inf")
    return QuantReport(scale_err, agree, float(err.max()) if err.numel() else 0.0, int(s64.size))


def packed_report(x: torch.Tensor, packed) -> QuantReport:
    """One packed KV block against the reference (x: the block's original full-precision values)."""
    spec = packed.spec
    return compare(x, packed.dequant(), packed.scale, spec.bits, spec.granularity, spec.group_size, True)


def cache_report(quantized_cache, original) -> QuantReport:
    """Every packed block of a QuantizedKVCache (all layers, K and V) against `original`, the
    full-precision KVCache it was built from (same entries, same order). A block kept in full
    precision must equal the original exactly (half_step = inf otherwise)."""
    reports, exact = [], True
    for l in range(quantized_cache.n_layers):
        start = 0
        for pair in quantized_cache.blocks(l):
            n = pair[0].shape[2]
            for which, stored in enumerate(pair):
                src = (original.keys(l), original.values(l))[which][:, :, start:start + n]
                if hasattr(stored, "spec"):                                  # a Packed block
                    reports.append(packed_report(src, stored))
                else:
                    exact = exact and torch.equal(stored, src)
            start += n
    w = worst(reports)
    return w if exact else QuantReport(w.scale_err, w.agree, float("inf"), w.n_groups)
