"""The life of a token: one prompt traced through the whole model and the sampling pipeline.

    ids -> embedding -> 18 x [attention (KV cache grows) -> MLP] -> final norm -> logits
        -> bias -> temperature -> top-k -> top-p -> sample

`trace_token` runs the engine once over the prompt with a `Recorder` on its hooks, so every
tensor shown is the real activation of this run (not recomputed beside it); the KV cache's
size is read from the cache object after each layer appends its entries, and once more after
the sampled token's decode step. The sampling half is `lib.decoding.sampling.run_pipeline`,
the same pipeline every decoding page uses. Returns small numpy arrays (picklable, cacheable).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lib.core.engine import Engine
from lib.core.hooks import Recorder
from lib.decoding.sampling import PipelineResult, SamplingConfig, run_pipeline, sample_next

RECORDED = ("embed", "probs", "attn_out", "resid_mid", "mlp_act", "resid_out", "final")
DEFAULT_BIAS = -3.0   # the page's bias slider default (on its default word " Paris"); lesson answers use it too


def word_bias(tokenizer, word: str, b: float) -> tuple[tuple[int, float], ...]:
    """The page's bias rule: `b` added to the logit of the FIRST token of `word` (no bias for
    an empty word or b = 0). The lesson answers use this same rule, so a step's answer is the
    number the page shows."""
    ids = tokenizer(word, add_special_tokens=False)["input_ids"] if word.strip() else []
    return ((int(ids[0]), float(b)),) if ids and b != 0 else ()


@dataclass
class LayerTrace:
    window: int | None          # sliding window of this layer (None = global)
    attn: np.ndarray            # (H, T, T) attention weights of the prompt's tokens
    cache_len: int              # entries this layer's KV cache holds after the prompt
    cache_bytes_total: int      # bytes of the whole cache right after this layer appended (cumulative)
    attn_norm: float            # ||attention output|| at the last position (what attention adds)
    mlp_norm: float             # ||MLP output|| at the last position (what the MLP adds)
    resid_norm: float           # ||residual stream|| at the last position after the layer
    mlp_act: np.ndarray         # (I,) the MLP's gated activation at the last position

    @property
    def last_row(self) -> np.ndarray:
        """(H, T) attention of the last token over the prompt."""
        return self.attn[:, -1, :]


@dataclass
class TokenTrace:
    ids: tuple[int, ...]
    embed: np.ndarray           # (T, D) scaled embeddings entering layer 0
    layers: list[LayerTrace]
    final: np.ndarray           # (D,) last position after the final norm
    logits: torch.Tensor        # (V,) float32 next-token logits
    pipeline: PipelineResult    # every sampling stage on these logits
    token: int                  # the sampled next token
    seed: int
    cache_bytes_decode: int     # whole cache after the sampled token's decode step
    cache_len_decode: int       # entries per layer after that step


def trace_token(engine: Engine, ids, cfg: SamplingConfig, seed: int) -> TokenTrace:
    """Run `ids` (the prompt, BOS included) through `engine` recording every stage, sample the
    next token with `cfg` and `seed`, then run that token's decode step to show the cache grow."""
    ids = tuple(int(i) for i in ids)
    spec = engine.spec
    rec = Recorder(RECORDED)
    cache = engine.new_cache(1, capacity=len(ids) + 4)
    cache_bytes: dict[int, int] = {}

    def after_layer(layer, x):            # reads the cache once layer `layer` has appended
        cache_bytes[layer] = cache.nbytes()

    hooks = rec.hooks()
    read_resid = hooks["resid_out"]
    hooks["resid_out"] = lambda l, x: (read_resid(l, x), after_layer(l, x))[0]
    x = torch.tensor([ids], device=engine.device)                                 # (1, T)
    logits = engine.forward(x, cache, hooks=hooks)[0, -1].float().cpu()           # (V,)

    layers = []
    for l in range(spec.n_layers):
        mid, out = rec[("resid_mid", l)][0, -1].float(), rec[("resid_out", l)][0, -1].float()   # (D,)
        layers.append(LayerTrace(
            window=spec.windows[l],
            attn=rec[("probs", l)][0].float().numpy(),                            # (H, T, T)
            cache_len=cache.length(l),
            cache_bytes_total=cache_bytes[l],
            attn_norm=float(rec[("attn_out", l)][0, -1].float().norm()),
            mlp_norm=float((out - mid).norm()),
            resid_norm=float(out.norm()),
            mlp_act=rec[("mlp_act", l)][0, -1].float().numpy(),                   # (I,)
        ))
    result = run_pipeline(logits, cfg, context=ids)
    token = sample_next(result.probs, torch.Generator().manual_seed(int(seed)))
    engine.forward(torch.tensor([[token]], device=engine.device), cache, logits="none")
    return TokenTrace(ids=ids, embed=rec[("embed", -1)][0].float().numpy(), layers=layers,
                      final=rec[("final", spec.n_layers)][0, -1].float().numpy(), logits=logits,
                      pipeline=result, token=token, seed=int(seed),
                      cache_bytes_decode=cache.nbytes(), cache_len_decode=cache.length(0))


@dataclass
class StageView:
    name: str                   # "input" (the model's softmax), "bias", "temperature", "top_k", "top_p"
    probs: np.ndarray           # (N,) probability of each shown token after this stage
    kept: int                   # tokens with probability > 0 after this stage
    mass: float                 # total probability of the shown tokens


def stage_views(trace: TokenTrace, n: int = 12, extra=()) -> tuple[list[int], list[StageView]]:
    """The n tokens the model ranks highest (plus `extra` ids, e.g. a biased token) and their
    probability after every stage of the pipeline: softmax of that stage's logits."""
    ids = torch.topk(trace.logits, n).indices.tolist()
    ids += [int(e) for e in extra if int(e) not in ids]
    index = torch.tensor(ids)
    views = []
    for s in trace.pipeline.stages:
        p = torch.softmax(s.logits, dim=-1)                                       # (V,)
        views.append(StageView(s.name, p[index].numpy(), int((p > 0).sum()), float(p[index].sum())))
    return ids, views


def entropy_bits(row: np.ndarray) -> float:
    """Entropy in bits of one attention row (or any distribution)."""
    p = row[row > 0]
    return float(-(p * np.log2(p)).sum())


def last_token_attention(trace: TokenTrace) -> np.ndarray:
    """(L, T): how much the last prompt token attends to each token, per layer (mean over heads)."""
    return np.stack([lay.last_row.mean(0) for lay in trace.layers])


@dataclass
class Peak:
    channel: int                # index of the largest |value|
    value: float
    ratio: float                # |value| / median |x|: how far it stands out


def peak(x: np.ndarray) -> Peak:
    """The channel of largest magnitude in a vector and how many medians it is."""
    a = np.abs(x)
    i = int(a.argmax())
    return Peak(i, float(x[i]), float(a[i] / max(float(np.median(a)), 1e-12)))


def norm(x: np.ndarray) -> float:
    return float(np.linalg.norm(x))


def first_token_share(trace: TokenTrace) -> float:
    """Mean over layers (and heads) of the last token's attention on the first token (BOS)."""
    return float(last_token_attention(trace)[:, 0].mean())
