"""The sampling pipeline shared by every decoding page.

    logits -> logit bias -> temperature -> top-k -> top-p -> min-p -> softmax -> sample

Each stage is a small pure function (inputs are never modified in place) that returns new
logits; filtering stages set removed tokens to -inf and also return the kept mask, so a page
can draw what every stage did. Temperature 0 means greedy (argmax), decided in one place:
`final_distribution` (one-hot on the argmax when `SamplingConfig.greedy`), which `run_pipeline`
ends with; `sample_next` then simply draws from it, and the decode loop
(lib/decoding/generate.py) has no greedy branch of its own. Randomness only comes from the
`torch.Generator` the caller passes in.

The filters are written so that their masks are bit-identical to transformers'
`TopKLogitsWarper`, `TopPLogitsWarper` and `MinPLogitsWarper` (tests/model check this on real
logits), and the bias stage to `SequenceBiasLogitsProcessor`.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import torch

from lib.decoding import vocab_max
from lib.decoding.float_sort import sort_floats

NEG_INF = float("-inf")
STAGES = ("bias", "temperature", "top_k", "top_p", "min_p")


class InvalidSamplingParameter(ValueError):
    """A sampling setting outside its allowed range; the message says what is allowed."""


class EmptyDistribution(ValueError):
    """Every token was removed (e.g. a ban applied after a filter that kept only that token)."""


class InvalidLogits(ValueError):
    """The model's logits contain NaN: nothing can be sampled, and no stage is to blame."""


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_bias_value(where: str, b) -> None:
    if not _is_number(b) or math.isnan(b) or b == float("inf"):
        raise InvalidSamplingParameter(f"bias for {where} must be a finite number or -inf, got {b}")


def _check_token_id(t) -> None:
    if not isinstance(t, int) or isinstance(t, bool) or t < 0:
        raise InvalidSamplingParameter(f"token ids must be whole numbers >= 0, got {t!r}")


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 1.0                   # 0 = greedy; > 0 divides the logits
    top_k: int | None = None                   # keep the k most likely (None = off)
    top_p: float | None = None                 # keep the smallest set with mass >= p (None = off)
    min_p: float | None = None                 # keep p_i >= min_p * p_max (None = off)
    bias: tuple[tuple[int, float], ...] = ()   # (token id, added logit); -inf bans
    order: tuple[str, ...] = STAGES            # stage order (pages compare orders)
    # (token ids, added logit): the bias goes on the LAST token, and only at steps where the
    # context already ends with the other tokens (transformers' SequenceBiasLogitsProcessor).
    sequence_bias: tuple[tuple[tuple[int, ...], float], ...] = ()

    def __post_init__(self):
        t = self.temperature
        if not _is_number(t) or math.isnan(t) or t < 0 or math.isinf(t):
            raise InvalidSamplingParameter(f"temperature must be a finite number >= 0, got {t}")
        k = self.top_k
        if k is not None and (not _is_number(k) or not math.isfinite(k) or int(k) != k or k < 1):
            raise InvalidSamplingParameter(f"top_k must be a whole number >= 1, got {k}")
        p = self.top_p
        if p is not None and (not _is_number(p) or not (0 < p <= 1)):
            raise InvalidSamplingParameter(f"top_p must be in (0, 1], got {p}")
        mp = self.min_p
        if mp is not None and (not _is_number(mp) or not (0 <= mp <= 1)):
            raise InvalidSamplingParameter(f"min_p must be in [0, 1], got {mp}")
        for tok, b in self.bias:
            _check_token_id(tok)
            _check_bias_value(f"token {tok}", b)
        for seq, b in self.sequence_bias:
            if len(seq) == 0:
                raise InvalidSamplingParameter("a biased sequence needs at least one token")
            for tok in seq:
                _check_token_id(tok)
            _check_bias_value(f"sequence {tuple(seq)}", b)
        if sorted(self.order) != sorted(STAGES):
            raise InvalidSamplingParameter(f"order must be a permutation of {STAGES}, got {self.order}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


# ---- stages ------------------------------------------------------------------------------
def apply_bias(logits: torch.Tensor, bias) -> torch.Tensor:
    """logits (..., V) + bias[token] for each (token, bias) pair. A new tensor.
    A token listed twice gets both biases added."""
    out = logits.clone()
    for tok, b in bias:
        out[..., tok] = out[..., tok] + b
    return out


def sequence_bias_pairs(sequence_bias, context) -> list[tuple[int, float]]:
    """The (token, bias) pairs a sequence bias contributes at this step: a 1-token sequence
    always; a longer one only when `context` (the ids so far) ends with all but its last token."""
    ctx = tuple(context)
    out = []
    for seq, b in sequence_bias:
        seq = tuple(seq)
        head = seq[:-1]
        if len(head) <= len(ctx) and (not head or ctx[-len(head):] == head):
            out.append((seq[-1], float(b)))
    return out


def apply_sequence_bias(logits: torch.Tensor, sequence_bias, context) -> torch.Tensor:
    """logits (V,) with every sequence bias that applies after `context` added (a new tensor)."""
    return apply_bias(logits, sequence_bias_pairs(sequence_bias, context))


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """logits / T for T > 0 (order kept, sharpness changed). T = 0 leaves them as they are
    (the same tensor, not a copy): greedy is decided by final_distribution."""
    if temperature == 0:
        return logits
    return logits / temperature


def top_k_mask(logits: torch.Tensor, k: int) -> torch.Tensor:
    """True for the k highest logits (ties at the k-th value are all kept, like transformers)."""
    k = min(int(k), logits.shape[-1])
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits >= kth


def top_p_mask(logits: torch.Tensor, p: float) -> torch.Tensor:
    """True for the smallest set of most likely tokens whose total probability reaches p.

    Written the way transformers' TopPLogitsWarper computes it, so the masks are identical:
    sort ascending, cumulative probability from the *least* likely token up; a token is removed
    while the mass of itself and everything less likely is <= 1 - p. In exact arithmetic that
    is "keep a token if the mass of the tokens more likely than it is still < p": the token
    that crosses p is included and the set is minimal. The most likely token is always kept.

    Speed: when an earlier filter (top-k) left only a few finite logits in a 1-D input, only
    those are sorted; the removed (-inf) tokens have probability 0 and add nothing to the sums."""
    x = logits.float()
    if x.dim() == 1:
        finite = torch.isfinite(x)
        n_finite = int(finite.sum())
        if 0 < n_finite < x.shape[-1] // 2:
            idx = torch.nonzero(finite).flatten()                                  # (n,)
            out = torch.zeros_like(finite)
            out[idx] = top_p_mask(x[idx], p)
            return out
    sorted_logits, order = sort_floats(x)                                         # (..., V) ascending
    cum = torch.softmax(sorted_logits, dim=-1).cumsum(dim=-1)                      # (..., V)
    remove_sorted = cum <= (1 - p)
    remove_sorted[..., -1] = False
    remove = remove_sorted.scatter(-1, order, remove_sorted)
    return ~remove


def min_p_mask(logits: torch.Tensor, min_p: float) -> torch.Tensor:
    """True where p_i >= min_p * max_j p_j (the most likely token is always kept)."""
    probs = torch.softmax(logits.float(), dim=-1)
    return probs >= min_p * probs.amax(dim=-1, keepdim=True)


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
    greedy: bool = False                # probs is one-hot on the argmax (else softmax of the last stage)

    @functools.cached_property
    def kept_count(self) -> int:
        """Tokens with probability > 0 in the final distribution (counted once)."""
        return int(torch.count_nonzero(self.probs))            # probabilities are never < 0

    def stage(self, name: str) -> StageRecord | None:
        return next((s for s in self.stages if s.name == name), None)


def run_pipeline(logits: torch.Tensor, cfg: SamplingConfig, context=()) -> PipelineResult:
    """All stages in cfg.order on one step's logits (V,) (float32 copy). For greedy (T = 0)
    the final distribution is one-hot on the argmax of the filtered logits.

    `context` (the token ids so far) is only needed for multi-token `cfg.sequence_bias`.
    The stages work in float32 whatever the model's dtype. Raises InvalidSamplingParameter for
    a biased token id outside the vocabulary, InvalidLogits for NaN logits and
    EmptyDistribution if the stages removed every token."""
    x = logits.float()
    V = x.shape[-1]
    if math.isnan(float(x.max())):                      # max propagates NaN: one pass over V
        raise InvalidLogits(f"the model's logits contain {int(torch.isnan(x).sum()):,} NaN values "
                            f"(an overflow in the forward pass?): nothing can be sampled")
    bias = list(cfg.bias) + sequence_bias_pairs(cfg.sequence_bias, context)
    bad = [tok for tok, _ in bias if tok >= V]
    if bad:
        raise InvalidSamplingParameter(f"biased token ids {bad} are outside the vocabulary of {V:,}")
    result = PipelineResult([StageRecord("input", x, None)])
    for stage in cfg.order:
        kept = None
        if stage == "bias" and bias:
            x = apply_bias(x, bias)
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
    if not _any_finite(x):
        raise EmptyDistribution("every token was removed by the stages "
                                f"{' -> '.join(s.name for s in result.stages[1:])}: nothing left to sample")
    result.probs, result.greedy = final_distribution(x, cfg.greedy), cfg.greedy
    if cfg.greedy:
        result.kept_count = 1                           # one-hot: nothing to count
    return result


def _any_finite(x: torch.Tensor) -> bool:
    """Is any value of x (no NaN in it) finite? Its max answers, unless that is +inf."""
    top = float(x.max())
    return math.isfinite(top) or (top > 0 and bool(torch.isfinite(x).any()))


def final_distribution(x: torch.Tensor, greedy: bool) -> torch.Tensor:
    """The distribution sampled from, given the pipeline's last logits x (..., V): softmax(x),
    or for greedy decoding (temperature 0) one-hot on argmax(x) — the one place greedy is made."""
    if greedy and x.dim() == 1:
        one_hot = torch.zeros_like(x)
        one_hot[vocab_max.argmax(x)] = 1.0
        return one_hot
    if greedy:
        return torch.zeros_like(x).scatter(-1, x.argmax(-1, keepdim=True), 1.0)
    return torch.softmax(x, dim=-1)


def sample_next(probs: torch.Tensor, generator: torch.Generator | None, kept_count: int | None = None) -> int:
    """Draw one token id from probs (V,). One-hot probs (greedy) always give the argmax.

    The exponential race (what vLLM's and gpt-fast's samplers do): every token draws a
    waiting time e_i ~ Exponential(1), as -ln(u_i) of a uniform u_i, and the token with the
    largest p_i / e_i wins: token i wins with probability exactly p_i / sum(p). A token with
    probability 0 scores 0 and never wins. The u_i are float64: float32's 24 bits would give
    no token below ~6e-8 of the leader's probability a chance at all.

    Why not one uniform u and the first token whose running sum of probabilities passes it
    (inverse CDF, ~10x cheaper)? That answer moves when the rounding of any token before the
    drawn one moves, and the same prompt's logits differ by up to ~4e-5 alone and batched
    with a class (lib/decoding/batching.py): 7 of 3,000 seeded first draws (30 prompts, T 0.8)
    came out different, enough for one visitor in a class of thirty to see another story.
    Here a draw changes only if the two best scores are that close (0 of 3,000).
    `kept_count`: the number of tokens with p > 0, if the caller counted them already."""
    if (kept_count if kept_count is not None else int(torch.count_nonzero(probs))) == 1:
        return vocab_max.argmax(probs)
    p = probs.detach().cpu()                                                       # (V,)
    token = vocab_max.argmax(race_scores(p, generator))
    if p[token] == 0:                      # every kept token drew u = 0 exactly (p 2^-53 each)
        token = vocab_max.argmax(p)
    return token


def race_scores(p: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """sample_next's race: scores p_i / e_i (float64, the shape of p (..., V), in place), e_i = -ln u_i."""
    score = torch.rand(p.shape, dtype=torch.float64, generator=generator)           # (..., V) u_i in [0, 1)
    return torch.div(p, score.log_().neg_(), out=score)                            # p_i / e_i, e_i in (0, inf]


def sample_many(probs: torch.Tensor, n: int, generator: torch.Generator | None) -> torch.Tensor:
    """n draws (n,) from probs (V,) by sample_next's race, at once (what a live check counts)."""
    return race_scores(probs.detach().cpu().expand(int(n), -1), generator).argmax(-1)   # (n,)
