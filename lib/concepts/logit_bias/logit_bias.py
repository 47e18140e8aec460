"""Logit bias: adding b to one token's logit multiplies its odds against every other token by
e^b and leaves every other pair's odds unchanged:

    p'_t / p'_j = e^(z_t + b) / e^(z_j) = e^b * p_t / p_j        p'_i / p'_j = p_i / p_j

(after temperature T the factor is e^(b/T) if the bias came first). -inf bans the token.
A bias acts on token ids, not on words: a word can be several tokens, and " Paris", "Paris",
" paris" are different tokens — so banning one id does not remove the concept.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from lib.decoding.sampling import EmptyDistribution, SamplingConfig, run_pipeline
from lib.model.tokens import token_text

MAX_WORDS, MAX_WORD_CHARS = 6, 40
BIAS_FIRST = ("bias", "temperature", "top_k", "top_p", "min_p")      # the standard order
TEMPERATURE_FIRST = ("temperature", "bias", "top_k", "top_p", "min_p")
FILTER_FIRST = ("temperature", "top_k", "top_p", "min_p", "bias")    # bias after the filters


def parse_words(text: str) -> list[str]:
    """Comma-separated words -> up to MAX_WORDS non-empty words of up to MAX_WORD_CHARS each."""
    words = [w.strip()[:MAX_WORD_CHARS] for w in (text or "").split(",")]
    out: list[str] = []
    for w in words:
        if w and w not in out:
            out.append(w)
    return out[:MAX_WORDS]


def variants(word: str) -> list[str]:
    """The spellings a tokenizer treats as different: with/without a leading space, and
    capitalised / lower-case first letter."""
    w = word.strip()
    forms = [w, w[:1].upper() + w[1:], w[:1].lower() + w[1:]]
    out: list[str] = []
    for f in forms:
        for v in (f, " " + f):
            if v.strip() and v not in out:
                out.append(v)
    return out


@dataclass(frozen=True)
class WordTokens:
    word: str                 # as typed
    variant: str              # the exact string that was tokenized
    ids: tuple[int, ...]      # its token ids (no BOS)
    pieces: tuple[str, ...]   # the tokens as visible text


def word_tokens(tokenizer, words, with_variants: bool = True) -> list[WordTokens]:
    """Tokenize every word (and its variants) without special tokens."""
    out = []
    for w in words:
        for v in (variants(w) if with_variants else [w]):
            ids = tuple(int(i) for i in tokenizer(v, add_special_tokens=False)["input_ids"])
            if ids:
                out.append(WordTokens(w, v, ids, tuple(token_text(tokenizer, i) for i in ids)))
    return out


def first_token_probs(logits: torch.Tensor, ids) -> np.ndarray:
    """The model's own probability (T = 1, no bias) of each given token id at this step."""
    probs = torch.softmax(logits.float(), dim=-1)
    return probs[torch.tensor(list(ids), dtype=torch.long)].double().numpy()


def bias_settings(entries: list[WordTokens], b: float, mode: str):
    """(bias pairs, sequence_bias) for SamplingConfig.
    mode "first": bias the first token of every variant (each distinct token once) — a
    multi-token word can then not even start, but other words sharing that token are hit too.
    mode "sequence": transformers' SequenceBias — a one-token variant is always biased; a longer
    one only on its last token, at steps where the context already holds the rest."""
    if mode == "first":
        firsts = list(dict.fromkeys(e.ids[0] for e in entries))
        return tuple((t, float(b)) for t in firsts), ()
    if mode == "sequence":
        seqs = list(dict.fromkeys(e.ids for e in entries))
        return (), tuple((s, float(b)) for s in seqs)
    raise ValueError(f"mode must be 'first' or 'sequence', got {mode!r}")


@dataclass
class OddsReport:
    target: int
    effective: float          # the log-odds shift the pipeline should give: b/T or b
    predicted: float          # e^effective (0 for a ban)
    measured: float           # (p'_t / p'_j) / (p_t / p_j) against the most likely other token j
    target_err: float         # max |measured / predicted - 1| over the top other tokens j
    others_err: float         # max |(p'_i/p'_j) / (p_i/p_j) - 1| over pairs of top unbiased tokens
    p_before: float
    p_after: float
    n_pairs: int


def odds_tolerance(logits: torch.Tensor, b: float, temperature: float) -> float:
    """Allowed relative error of a measured odds ratio: the pipeline works in float32, so the
    biased, temperature-scaled logits carry rounding of ~eps32 x their magnitude, and an odds
    ratio is exp of a difference of two of them. 8 eps32 x (1 + largest |logit| / T + |b| / T)."""
    mag = float(logits.abs().max()) / temperature + (0.0 if math.isinf(b) else abs(b) / min(temperature, 1.0))
    return 8 * torch.finfo(torch.float32).eps * (1 + mag)


def _ratio_err(r: np.ndarray, want: float) -> float:
    if want == 0:
        return float(np.abs(r).max())          # a ban: every measured ratio must be exactly 0
    return float(np.abs(r / want - 1).max())


def _log_probs(logits: torch.Tensor, cfg: SamplingConfig) -> torch.Tensor:
    """log of the pipeline's final distribution (V,), read safely in float64 from its final
    logits (so odds of very unlikely tokens do not underflow to 0/0)."""
    res = run_pipeline(logits, cfg)
    return torch.log_softmax(res.stages[-1].logits.double(), dim=-1)


def odds_report(logits: torch.Tensor, target: int, b: float, temperature: float, order=BIAS_FIRST,
                top: int = 20) -> OddsReport:
    """Measure the odds ratios in the pipeline's real output (bias + temperature, no filters)
    against the same pipeline without the bias. T must be > 0 (odds need a distribution)."""
    base = _log_probs(logits, SamplingConfig(temperature))                         # (V,)
    new = _log_probs(logits, SamplingConfig(temperature, bias=((int(target), float(b)),), order=tuple(order)))
    bias_first = list(order).index("bias") < list(order).index("temperature")
    eff = b / temperature if bias_first else b
    want = 0.0 if eff == -math.inf else math.exp(eff)
    others = [i for i in torch.topk(base, top + 1).indices.tolist() if i != target][:top]
    o = torch.tensor(others)
    r_t = torch.exp((new[target] - new[o]) - (base[target] - base[o])).numpy()      # (top,)
    d = new[o] - base[o]                                                           # (top,)
    r_o = torch.exp(d[:, None] - d[None, :]).numpy()                               # (top, top)
    return OddsReport(int(target), eff, want, float(r_t[0]), _ratio_err(r_t, want),
                      float(np.abs(r_o - 1).max()), float(base[target].exp()), float(new[target].exp()),
                      len(others))


@dataclass
class BiasSweep:
    biases: np.ndarray        # (n,)
    bias_first: np.ndarray    # (n,) measured log odds ratio, order bias -> temperature
    temp_first: np.ndarray    # (n,) measured log odds ratio, order temperature -> bias


def bias_sweep(logits: torch.Tensor, target: int, temperature: float, biases) -> BiasSweep:
    """Measured log(odds ratio) of the target vs the most likely other token, for each b."""
    bs = np.asarray(list(biases), dtype=float)
    a = [math.log(odds_report(logits, target, float(b), temperature, BIAS_FIRST, 1).measured) for b in bs]
    c = [math.log(odds_report(logits, target, float(b), temperature, TEMPERATURE_FIRST, 1).measured) for b in bs]
    return BiasSweep(bs, np.array(a), np.array(c))


@dataclass
class OrderRow:
    order: tuple[str, ...]
    p_target: float | None    # the target's final probability (None: nothing was left)
    kept: int | None          # tokens left after all stages
    top_token: int | None     # the most likely token afterwards


def order_table(logits: torch.Tensor, bias, sequence_bias, target: int, temperature: float, top_p: float,
                context=()) -> list[OrderRow]:
    """The same bias at three places in the pipeline (with top-p on): before temperature,
    after temperature, after the filters."""
    rows = []
    for order in (BIAS_FIRST, TEMPERATURE_FIRST, FILTER_FIRST):
        cfg = SamplingConfig(temperature, top_p=top_p, bias=tuple(bias), sequence_bias=tuple(sequence_bias),
                             order=order)
        try:
            res = run_pipeline(logits, cfg, context=tuple(context))
            rows.append(OrderRow(order, float(res.probs[target]), res.kept_count, int(res.probs.argmax())))
        except EmptyDistribution:
            rows.append(OrderRow(order, None, None, None))
    return rows


def contains_any(token_ids, banned) -> int:
    """How many of `token_ids` are in `banned` (a ban must make this 0)."""
    banned = set(banned)
    return sum(1 for t in token_ids if t in banned)


def completed_sequences(context, generated, sequences) -> int:
    """How many times any of `sequences` (token-id tuples) is completed by a generated token,
    looking back into the context for the earlier tokens (a ban must make this 0)."""
    ids = list(context) + list(generated)
    start = len(context)
    n = 0
    for seq in sequences:
        L = len(seq)
        for end in range(max(start, L - 1), len(ids)):     # the completing token is a generated one
            if tuple(ids[end - L + 1:end + 1]) == tuple(seq):
                n += 1
    return n


@dataclass
class TopChange:
    ids: np.ndarray       # (n,) tokens: the top tokens before and after the bias
    before: np.ndarray    # (n,) probability without the bias
    after: np.ndarray     # (n,) probability with it


def top_change(logits: torch.Tensor, bias, sequence_bias, temperature: float, context=(), n: int = 8) -> TopChange:
    """Final probabilities of the most likely tokens without and with the bias (standard order)."""
    before = run_pipeline(logits, SamplingConfig(temperature)).probs
    after = run_pipeline(logits, SamplingConfig(temperature, bias=tuple(bias), sequence_bias=tuple(sequence_bias)),
                         context=tuple(context)).probs
    n = min(n, before.shape[-1])
    ids = list(dict.fromkeys(torch.topk(before, n).indices.tolist() + torch.topk(after, n).indices.tolist()))
    ids.sort(key=lambda i: -float(before[i]))
    idx = torch.tensor(ids)
    return TopChange(idx.numpy(), before[idx].double().numpy(), after[idx].double().numpy())
