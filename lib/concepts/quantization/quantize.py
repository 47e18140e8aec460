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

Everything is "fake quantization": the codes are computed exactly, and the dequantized
float tensor is what the model then uses. Storage is accounted for by `storage_bytes`
(codes at b bits + one fp16 scale, and an fp16 zero point if asymmetric, per group).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

GRANULARITIES = ("tensor", "token", "channel", "group")
BITS = (16, 8, 4, 2)
SCALE_BYTES = 2  # scales and zero points stored as fp16


@dataclass(frozen=True)
class QuantSpec:
    """How to quantize: bits in 2..16, symmetric or not, granularity, group size (channels)."""
    bits: int = 8
    granularity: str = "tensor"
    symmetric: bool = True
    group_size: int = 64

    def __post_init__(self):
        if not 2 <= int(self.bits) <= 16:
            raise ValueError(f"bits must be in 2..16, got {self.bits}")
        if self.granularity not in GRANULARITIES:
            raise ValueError(f"granularity must be one of {GRANULARITIES}, got {self.granularity!r}")
        if self.group_size < 1:
            raise ValueError(f"group_size must be >= 1, got {self.group_size}")

    @property
    def qmax(self) -> int:
        """Largest code magnitude (symmetric) or largest code (asymmetric)."""
        return 2 ** (self.bits - 1) - 1 if self.symmetric else 2 ** self.bits - 1

    def label(self) -> str:
        g = f" g{self.group_size}" if self.granularity == "group" else ""
        return f"int{self.bits} {self.granularity}{g}{'' if self.symmetric else ' asym'}"


@dataclass
class Quantized:
    codes: torch.Tensor     # int32, same shape as x
    scale: torch.Tensor     # broadcastable to x (one value per group)
    zero: torch.Tensor      # broadcastable to x (0 for symmetric)
    dequant: torch.Tensor   # float32, same shape as x
    n_groups: int           # how many scales were used


@dataclass(frozen=True)
class ErrorStats:
    mse: float
    sqnr_db: float          # 10 log10( sum x^2 / sum (x - x_hat)^2 ); inf if exact
    max_error: float


def _grouped(x: torch.Tensor, spec: QuantSpec) -> tuple[torch.Tensor, tuple[int, ...]]:
    """View x (..., N, C) so that one scale = one reduction over the returned dims."""
    if spec.granularity == "tensor":
        return x, (-2, -1)
    if spec.granularity == "token":
        return x, (-1,)
    if spec.granularity == "channel":
        return x, (-2,)
    C, g = x.shape[-1], spec.group_size
    if C % g:
        raise ValueError(f"group size {g} does not divide the {C} channels")
    return x.reshape(*x.shape[:-1], C // g, g), (-1,)          # (..., N, C/g, g)


def quantize(x: torch.Tensor, spec: QuantSpec) -> Quantized:
    """Quantize x (..., N, C) (a 1-D x is treated as one row) and dequantize it again."""
    shape = x.shape
    xf = x.float().reshape(1, -1) if x.dim() == 1 else x.float()
    xg, dims = _grouped(xf, spec)
    if spec.symmetric:
        amax = xg.abs().amax(dim=dims, keepdim=True)
        scale = amax / spec.qmax
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))  # all-zero group
        zero = torch.zeros_like(scale)
        codes = torch.clamp(torch.round(xg / scale), -spec.qmax, spec.qmax)
    else:
        lo, hi = xg.amin(dim=dims, keepdim=True), xg.amax(dim=dims, keepdim=True)
        scale = (hi - lo) / spec.qmax
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
        zero = torch.round(-lo / scale)
        codes = torch.clamp(torch.round(xg / scale) + zero, 0, spec.qmax)
    deq = (codes - zero) * scale
    return Quantized(codes.to(torch.int32).reshape(shape), scale, zero, deq.reshape(shape),
                     n_groups=scale.numel())


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
