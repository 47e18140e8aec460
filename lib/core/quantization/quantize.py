"""Integer quantization of a tensor: codes + scales, and how much the round trip costs.

A b-bit quantizer keeps only 2^b codes. One *scale* maps a group of real values onto them:

    symmetric : qmax = 2^(b-1) - 1,  scale = max|x| / qmax,
                code = clamp(round(x / scale), -qmax, qmax),       x_hat = code * scale
    asymmetric: scale = (max - min) / (2^b - 1),  zero = round(-min / scale),
                code = clamp(round(x / scale) + zero, 0, 2^b - 1),  x_hat = (code - zero) * scale

Which values share one scale is the *granularity*, on x of shape (..., N, C) — N tokens
(rows) by C channels (columns):

    "tensor"  : one scale for the whole (N, C) slice
    "token"   : one scale per row        (N scales)
    "channel" : one scale per column     (C scales)
    "group"   : one scale per `group_size` consecutive channels of a row (N * C/g scales)

One large value inside a group stretches that group's scale, so every other value in the
group lands on fewer codes: that is the whole activation-outlier story.

The quantizer itself (QuantSpec, quantize) lives in lib/core/cache/quantized.py, where the
quantized KV cache stores real packed codes; this module adds what the pages measure with it:
"fake quantization" (quantize -> dequantize, the float tensor the model then uses), error
statistics, and the storage a quantized tensor needs (`storage_bytes`: codes at b bits + one
fp16 scale, and an fp16 zero point if asymmetric, per group).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lib.core.cache.quantized import GRANULARITIES, Quantized, QuantSpec, grouped as _grouped, quantize

__all__ = ["GRANULARITIES", "BITS", "SCALE_BYTES", "QuantSpec", "Quantized", "ErrorStats", "quantize",
           "fake_quantize", "error_stats", "storage_bytes", "step_size", "clip", "error_grid"]

BITS = (16, 8, 4, 2)
SCALE_BYTES = 2  # scales and zero points stored as fp16


@dataclass(frozen=True)
class ErrorStats:
    mse: float
    sqnr_db: float          # 10 log10( sum x^2 / sum (x - x_hat)^2 ); inf if exact
    max_error: float


def fake_quantize(x: torch.Tensor, spec: QuantSpec) -> torch.Tensor:
    """quantize -> dequantize, in x's dtype and shape (what a hook puts back into the model)."""
    return quantize(x, spec).dequant.to(x.dtype)


def error_stats(x: torch.Tensor, x_hat: torch.Tensor) -> ErrorStats:
    """MSE, SQNR (dB) and max |error| of a reconstruction, computed in float64."""
    x, x_hat = x.double(), x_hat.double()
    err = x - x_hat
    noise = float((err ** 2).sum())
    signal = float((x ** 2).sum())
    sqnr = math.inf if noise == 0 else 10 * math.log10(signal / noise) if signal > 0 else -math.inf
    return ErrorStats(float((err ** 2).mean()), sqnr, float(err.abs().max()))


def storage_bytes(shape: tuple[int, ...], spec: QuantSpec) -> int:
    """Bytes to store a quantized tensor of `shape` (..., N, C): codes + per-group metadata."""
    *lead, N, C = shape if len(shape) >= 2 else (1, *shape)
    slices = math.prod(lead) if lead else 1
    groups_per_slice = {"tensor": 1, "token": N, "channel": C,
                        "group": N * math.ceil(C / spec.group_size)}[spec.granularity]
    per_group = SCALE_BYTES * (1 if spec.symmetric else 2)
    code_bytes = math.ceil(slices * N * C * spec.bits / 8)
    return code_bytes + slices * groups_per_slice * per_group


def step_size(x: torch.Tensor, spec: QuantSpec) -> torch.Tensor:
    """The quantization step (= scale) of every group, flattened: how coarse the grid is."""
    return quantize(x, spec).scale.flatten()


def clip(x: torch.Tensor, threshold: float) -> torch.Tensor:
    """Clamp every value to [-threshold, threshold] (the outlier-removal experiment)."""
    return torch.clamp(x, -threshold, threshold)


def error_grid(x: torch.Tensor, bits: tuple[int, ...], granularities: tuple[str, ...] = GRANULARITIES,
               group_size: int = 64, symmetric: bool = True) -> list[list[ErrorStats]]:
    """ErrorStats of quantizing x at every (bits, granularity): rows = bits, columns = granularities."""
    return [[error_stats(x, fake_quantize(x.float(), QuantSpec(b, g, symmetric, group_size))) for g in granularities]
            for b in bits]
