"""The sampling pipeline shared by every decoding page.

    logits -> logit bias -> temperature -> top-k -> top-p -> min-p -> softmax -> sample

Each stage is a small pure function (inputs are never modified in place) that returns new
logits; filtering stages set removed tokens to -inf and also return the kept mask, so a page
can draw what every stage did. Temperature 0 means greedy (argmax), decided in one place:
`sample_next`. Randomness only comes from the `torch.Generator` the caller passes in.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

NEG_INF = float("-inf")
STAGES = ("bias", "temperature", "top_k", "top_p", "min_p")


class InvalidSamplingParameter(ValueError):
    """A sampling setting outside its allowed range; the message says what is allowed."""


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 1.0                   # 0 = greedy; > 0 divides the logits
    top_k: int | None = None                   # keep the k most likely (None = off)
    top_p: float | None = None                 # keep the smallest set with mass >= p (None = off)
    min_p: float | None = None                 # keep p_i >= min_p * p_max (None = off)
    bias: tuple[tuple[int, float], ...] = ()   # (token id, added logit); -inf bans
    order: tuple[str, ...] = STAGES            # stage order (pages compare orders)

    def __post_init__(self):
        t = self.temperature
        if not isinstance(t, (int, float)) or math.isnan(t) or t < 0 or math.isinf(t):
            raise InvalidSamplingParameter(f"temperature must be a finite number >= 0, got {t}")
        if self.top_k is not None and (int(self.top_k) != self.top_k or self.top_k < 1):
            raise InvalidSamplingParameter(f"top_k must be a whole number >= 1, got {self.top_k}")
        if self.top_p is not None and not (0 < self.top_p <= 1):
            raise InvalidSamplingParameter(f"top_p must be in (0, 1], got {self.top_p}")
        if self.min_p is not None and not (0 <= self.min_p <= 1):
            raise InvalidSamplingParameter(f"min_p must be in [0, 1], got {self.min_p}")
        for tok, b in self.bias:
            if math.isnan(b) or b == float("inf"):
                raise InvalidSamplingParameter(f"bias for token {tok} must be finite or -inf, got {b}")
        if sorted(self.order) != sorted(STAGES):
            raise InvalidSamplingParameter(f"order must be a permutation of {STAGES}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


# ---- stages ------------------------------------------------------------------------------
def apply_bias(logits: torch.Tensor, bias) -> torch.Tensor:
    """logits (..., V) + bias[token] for each (token, bias) pair. A new tensor."""
    out = logits.clone()
    for tok, b in bias:
        out[..., tok] = out[..., tok] + b
    return out


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """logits / T for T > 0 (order kept, sharpness changed). T = 0 is greedy: see sample_next."""
    if temperature == 0:
        return logits.clone()
    return logits / temperature


def top_k_mask(logits: torch.Tensor, k: int) -> torch.Tensor:
    """True for the k highest logits (ties at the k-th value are all kept, like transformers)."""
    k = min(int(k), logits.shape[-1])
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits >= kth


def top_p_mask(logits: torch.Tensor, p: float) -> torch.Tensor:
    """True for the smallest set of most likely tokens whose total probability reaches p.

    Sorted descending, a token is kept if the mass *before* it is still < p, so the token that
    crosses p is included and the set is minimal. At least one token is always kept."""
    probs = torch.softmax(logits.float(), dim=-1)
    sorted_p, order = torch.sort(probs, dim=-1, descending=True, stable=True)
    mass_before = torch.cumsum(sorted_p, dim=-1) - sorted_p
    keep_sorted = mass_before < p
    keep_sorted[..., 0] = True
    return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)


def min_p_mask(logits: torch.Tensor, min_p: float) -> torch.Tensor:
    """True where p_i >= min_p * max_j p_j (the most likely token is always kept)."""
    probs = torch.softmax(logits.float(), dim=-1)
    return probs >= min_p * probs.max(dim=-1, keepdim=True).values


def keep_only(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return logits.masked_fill(~mask, NEG_INF)


# ---- the pipeline ------------------------------------------------------------------------
@dataclass
class StageRecord:
    name: str
    logits: torch.Tensor             # (V,) after this stage
    kept: torch.Tensor | None        # (V,) bool for filtering stages, else None


@dataclass
class PipelineResult:
    stages: list[StageRecord] = field(default_factory=list)
    probs: torch.Tensor | None = None   # (V,) final distribution sampled from

    @property
    def kept_count(self) -> int:
        return int((self.probs > 0).sum())


def run_pipeline(logits: torch.Tensor, cfg: SamplingConfig) -> PipelineResult:
    """All stages in cfg.order on one step's logits (V,) (float32 copy). For greedy (T = 0)
    the final distribution is one-hot on the argmax of the filtered logits."""
    x = logits.float()
    result = PipelineResult([StageRecord("input", x, None)])
    for stage in cfg.order:
        kept = None
        if stage == "bias" and cfg.bias:
            x = apply_bias(x, cfg.bias)
        elif stage == "temperature":
            x = apply_temperature(x, cfg.temperature)
        elif stage == "top_k" and cfg.top_k is not None:
            kept = top_k_mask(x, cfg.top_k)
        elif stage == "top_p" and cfg.top_p is not None:
            kept = top_p_mask(x, cfg.top_p)
        elif stage == "min_p" and cfg.min_p is not None:
            kept = min_p_mask(x, cfg.min_p)
        else:
            continue
        if kept is not None:
            x = keep_only(x, kept)
        result.stages.append(StageRecord(stage, x, kept))
    if cfg.greedy:
        result.probs = torch.zeros_like(x).scatter(-1, x.argmax(-1, keepdim=True), 1.0)
    else:
        result.probs = torch.softmax(x, dim=-1)
    return result


def sample_next(probs: torch.Tensor, generator: torch.Generator | None) -> int:
    """Draw one token id from probs (V,). One-hot probs (greedy) always give the argmax."""
    if int((probs > 0).sum()) == 1:
        return int(probs.argmax())
    return int(torch.multinomial(probs, 1, generator=generator))
