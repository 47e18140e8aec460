"""A quantized KV cache that really stores integer codes: int16, int8, int4 (two per byte) or
int2 (four per byte), plus one fp16 scale per group. `nbytes()` sums the storage of the
tensors it allocated, so the memory saving is measured, not computed.

The quantizer (shared with lib.core.quantization for activations):

    symmetric : qmax = 2^(b-1) - 1,  scale = max|x| / qmax,
                code = clamp(round(x / scale), -qmax, qmax),       x_hat = code * scale
    asymmetric: scale = (max - min) / (2^b - 1),  zero = round(-min / scale),
                code = clamp(round(x / scale) + zero, 0, 2^b - 1),  x_hat = (code - zero) * scale

Which values share one scale is the *granularity*, on x of shape (..., N, C) — N tokens by C
channels: "tensor" (one per (..., N, C) slice), "token" (one per row), "channel" (one per
column), "group" (one per `group_size` consecutive channels of a row).

The cache: entries leave the `residual` newest (kept in full precision, as in KIVI) in
blocks; each block is quantized once and stored packed. Every read (each forward, each
layer) dequantizes the packed blocks again: attention runs on what the codes hold.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

GRANULARITIES = ("tensor", "token", "channel", "group")
SCALE_DTYPE = torch.float16          # scales and zero points are stored as fp16


@dataclass(frozen=True)
class QuantSpec:
    """How to quantize: bits in 2..16, granularity, symmetric or not, group size (channels)."""
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
    scale: torch.Tensor     # broadcastable to the grouped view of x (one value per group)
    zero: torch.Tensor      # same shape as scale (0 for symmetric)
    dequant: torch.Tensor   # float32, same shape as x
    n_groups: int           # how many scales were used


def grouped(x: torch.Tensor, spec: QuantSpec) -> tuple[torch.Tensor, tuple[int, ...]]:
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


def _round_up(scale: torch.Tensor, dtype) -> torch.Tensor:
    """scale rounded *up* to `dtype` (so max|x| / scale never exceeds qmax), back in float32."""
    s = scale.to(dtype)
    low = s.float() < scale
    s = torch.where(low, torch.nextafter(s, torch.full_like(s, float("inf"))), s)
    return s.float()


def quantize(x: torch.Tensor, spec: QuantSpec, scale_dtype=None) -> Quantized:
    """Quantize x (..., N, C) (a 1-D x is treated as one row) and dequantize it again.
    scale_dtype: store the scales in this dtype (rounded up), e.g. torch.float16."""
    shape = x.shape
    xf = x.float().reshape(1, -1) if x.dim() == 1 else x.float()
    xg, dims = grouped(xf, spec)
    if spec.symmetric:
        scale = xg.abs().amax(dim=dims, keepdim=True) / spec.qmax
    else:
        lo, hi = xg.amin(dim=dims, keepdim=True), xg.amax(dim=dims, keepdim=True)
        scale = (hi - lo) / spec.qmax
    if scale_dtype is not None:
        scale = _round_up(scale, scale_dtype)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))       # all-zero group
    if spec.symmetric:
        zero = torch.zeros_like(scale)
        codes = torch.clamp(torch.round(xg / scale), -spec.qmax, spec.qmax)
    else:
        zero = torch.round(-lo / scale)
        codes = torch.clamp(torch.round(xg / scale) + zero, 0, spec.qmax)
    deq = (codes - zero) * scale
    return Quantized(codes.to(torch.int32).reshape(shape), scale, zero, deq.reshape(shape), n_groups=scale.numel())


# ---- packing: codes -> the bytes actually stored ------------------------------------------------
def pack(codes: torch.Tensor, bits: int, symmetric: bool = True) -> torch.Tensor:
    """Integer codes -> storage: int16 (16 bits), int8 (8 bits), or uint8 with 8 // bits codes
    per byte along the last dim (4 and 2 bits; last dim * bits must be a multiple of 8)."""
    u = codes.to(torch.int32) + (2 ** (bits - 1) if symmetric else 0)          # unsigned 0 .. 2^b - 1
    if bits == 16:
        return (u - 2 ** 15).to(torch.int16)
    if bits == 8:
        return (u - 2 ** 7).to(torch.int8)
    if 8 % bits:
        raise ValueError(f"cannot pack {bits}-bit codes into bytes")
    per = 8 // bits
    if codes.shape[-1] % per:
        raise ValueError(f"last dim {codes.shape[-1]} is not a multiple of {per}")
    u = u.reshape(*codes.shape[:-1], codes.shape[-1] // per, per)               # (..., C/per, per)
    shifts = torch.arange(per, dtype=torch.int32) * bits                        # code i -> bits [i*b, (i+1)*b)
    return (u << shifts).sum(-1).to(torch.uint8)                                # (..., C/per)


def unpack(data: torch.Tensor, bits: int, symmetric: bool = True) -> torch.Tensor:
    """Storage -> int32 codes (the inverse of `pack`)."""
    if bits in (16, 8):
        u = data.to(torch.int32) + 2 ** (bits - 1)
    else:
        per = 8 // bits
        shifts = torch.arange(per, dtype=torch.int32) * bits
        u = (data.to(torch.int32)[..., None] >> shifts) & (2 ** bits - 1)       # (..., C/per, per)
        u = u.reshape(*data.shape[:-1], data.shape[-1] * per)
    return u - (2 ** (bits - 1) if symmetric else 0)


@dataclass
class Packed:
    """One quantized block as stored: packed codes and fp16 scales (and zero points)."""
    data: torch.Tensor
    scale: torch.Tensor
    zero: torch.Tensor | None
    shape: tuple[int, ...]
    spec: QuantSpec

    @classmethod
    def of(cls, x: torch.Tensor, spec: QuantSpec) -> "Packed":
        q = quantize(x, spec, scale_dtype=SCALE_DTYPE)
        zero = None if spec.symmetric else q.zero.to(SCALE_DTYPE)
        return cls(pack(q.codes, spec.bits, spec.symmetric), q.scale.to(SCALE_DTYPE), zero, tuple(x.shape), spec)

    def dequant(self, dtype=torch.float32) -> torch.Tensor:
        """(codes - zero) * scale, in the shape of the original block."""
        codes = unpack(self.data, self.spec.bits, self.spec.symmetric).float().reshape(self.shape)
        cg, _ = grouped(codes, self.spec)
        zero = 0.0 if self.zero is None else self.zero.float()
        return ((cg - zero) * self.scale.float()).reshape(self.shape).to(dtype)

    def step(self) -> torch.Tensor:
        """The quantization step (the scale) of every element, in the block's shape."""
        ones, _ = grouped(torch.ones(self.shape), self.spec)
        return (ones * self.scale.float()).reshape(self.shape)

    def nbytes(self) -> int:
        parts = [self.data, self.scale] + ([self.zero] if self.zero is not None else [])
        return sum(t.untyped_storage().nbytes() for t in parts)


@dataclass(frozen=True)
class KVQuantPolicy:
    key: QuantSpec | None          # None = keys stay in full precision
    value: QuantSpec | None        # None = values stay in full precision
    residual: int = 0              # newest entries kept in full precision

    def label(self) -> str:
        k = self.key.label() if self.key else "fp"
        v = self.value.label() if self.value else "fp"
        return f"K {k} / V {v}" + (f" / recent {self.residual} fp" if self.residual else "")


class QuantizedKVCache:
    """KVCacheProtocol: entries older than the `residual` newest ones live as packed blocks."""

    def __init__(self, n_layers: int, batch: int, n_kv_heads: int, head_dim: int, dtype=torch.float32,
                 device="cpu", capacity: int = 0, *, policy: KVQuantPolicy):
        self.n_layers, self.batch, self.dtype, self.policy = n_layers, batch, dtype, policy
        empty = lambda: torch.zeros(batch, n_kv_heads, 0, head_dim, dtype=dtype, device=device)  # noqa: E731
        self._blocks: list[list[tuple[object, object]]] = [[] for _ in range(n_layers)]   # (K, V) per block
        self._tail_k = [empty() for _ in range(n_layers)]                                  # (B, H, r, d)
        self._tail_v = [empty() for _ in range(n_layers)]
        self._pos = [torch.zeros(batch, 0, dtype=torch.long, device=device) for _ in range(n_layers)]
        self.next_position = 0

    @classmethod
    def from_cache(cls, cache, policy: KVQuantPolicy) -> "QuantizedKVCache":
        """A quantized copy of a full-precision cache (its entries quantized as one block)."""
        k0 = cache.keys(0)
        q = cls(cache.n_layers, k0.shape[0], k0.shape[1], k0.shape[3], k0.dtype, k0.device, policy=policy)
        for l in range(cache.n_layers):
            q.append(l, cache.keys(l), cache.values(l), cache.positions(l))
        q.next_position = cache.next_position
        return q

    def length(self, layer: int = 0) -> int:
        return self._pos[layer].shape[1]

    def _read(self, layer: int, which: int) -> torch.Tensor:
        parts = [b[which].dequant(self.dtype) if isinstance(b[which], Packed) else b[which]
                 for b in self._blocks[layer]]
        return torch.cat(parts + [(self._tail_k, self._tail_v)[which][layer]], dim=2)      # (B, H, S, d)

    def keys(self, layer: int) -> torch.Tensor:
        return self._read(layer, 0)

    def values(self, layer: int) -> torch.Tensor:
        return self._read(layer, 1)

    def positions(self, layer: int) -> torch.Tensor:
        return self._pos[layer]

    def blocks(self, layer: int) -> list[tuple[object, object]]:
        """The stored blocks of a layer: (K, V), each a `Packed` or a full-precision tensor."""
        return self._blocks[layer]

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor):
        """Add k, v (B, H, T, d) at positions pos (B, T); the entries that leave the residual
        window are quantized as one block and stored packed. Returns (keys, values, positions)."""
        self._tail_k[layer] = torch.cat([self._tail_k[layer], k], dim=2)
        self._tail_v[layer] = torch.cat([self._tail_v[layer], v], dim=2)
        self._pos[layer] = torch.cat([self._pos[layer], pos], dim=1)
        n = self._tail_k[layer].shape[2] - self.policy.residual
        if n > 0:
            block = []
            for tail, spec in ((self._tail_k[layer], self.policy.key), (self._tail_v[layer], self.policy.value)):
                old = tail[:, :, :n].clone()                                                # (B, H, n, d)
                block.append(Packed.of(old, spec) if spec is not None else old)
            self._blocks[layer].append(tuple(block))
            self._tail_k[layer] = self._tail_k[layer][:, :, n:].clone()                   # own storage
            self._tail_v[layer] = self._tail_v[layer][:, :, n:].clone()
        return self.keys(layer), self.values(layer), self.positions(layer)

    def advance(self, positions: torch.Tensor) -> None:
        self.next_position = int(positions.max()) + 1

    def nbytes(self) -> int:
        """Bytes of the K/V storage allocated: packed codes, scales, full-precision entries."""
        def size(t):
            return t.nbytes() if isinstance(t, Packed) else t.untyped_storage().nbytes()
        return sum(size(k) + size(v) for l in range(self.n_layers) for k, v in self._blocks[l]) + \
            sum(self._tail_k[l].untyped_storage().nbytes() + self._tail_v[l].untyped_storage().nbytes()
                for l in range(self.n_layers))
