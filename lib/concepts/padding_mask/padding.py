"""Padding and the attention mask: a batch of different-length prompts as one (B, T) tensor.

Prompts are padded to the longest (left or right). The mask keeps padding out of attention:
in this engine a position of -1 marks padding, and no query ever attends to it. Each real
token gets the position it would have alone (0, 1, 2, ...), so the padded batch reproduces
every prompt's own outputs. The mask removes padding from the *result*, not from the *work*:
dense matmuls still run over all B x T rows and B x T x T score entries.

Three ways to run the same prompts:
  padded     one (B, T) forward, T = longest prompt (+ optional extra padding)
  one by one B forwards of (1, L_b)
  packed     one (1, sum L_b) row, positions restarting per prompt, and a block-diagonal
             mask (a "scores" hook) so prompts cannot see each other
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lib.core.engine import Engine
from lib.core.cache.dense import PAD_POSITION
from lib.core.timing import measure

SIDES = ("left", "right")
# How positions are given to the padded batch:
#   "mask"        real tokens 0..L-1, padding -1 (masked)            -> equals each prompt alone
#   "mask_shift"  padding -1 (masked), real tokens numbered by column (left padding starts late)
#   "no_mask"     padding gets ordinary positions: it is attended like text
POSITION_MODES = ("mask", "mask_shift", "no_mask")


@dataclass
class PaddedBatch:
    ids: torch.Tensor         # (B, T) token ids, pad_id in padding
    positions: torch.Tensor   # (B, T) positions given to the engine, -1 = masked padding
    valid: torch.Tensor       # (B, T) bool, True on real tokens
    lengths: tuple[int, ...]  # (B,) real tokens per prompt
    side: str

    @property
    def valid_fraction(self) -> float:
        return float(self.valid.float().mean())

    def last_index(self) -> torch.Tensor:
        """(B,) column of each prompt's last real token."""
        T = self.ids.shape[1]
        if self.side == "left":
            return torch.full((len(self.lengths),), T - 1)
        return torch.tensor(self.lengths) - 1


def pad_batch(prompts, pad_id: int, side: str = "left", mode: str = "mask",
              length: int | None = None) -> PaddedBatch:
    """Pad token-id sequences to `length` (default: the longest) on `side`."""
    if side not in SIDES or mode not in POSITION_MODES:
        raise ValueError(f"side must be one of {SIDES}, mode one of {POSITION_MODES}")
    lengths = tuple(len(p) for p in prompts)
    if not lengths or min(lengths) == 0:
        raise ValueError("need at least one non-empty prompt")
    T = max(max(lengths), length or 0)
    B = len(prompts)
    ids = torch.full((B, T), int(pad_id), dtype=torch.long)
    valid = torch.zeros(B, T, dtype=torch.bool)
    positions = torch.full((B, T), PAD_POSITION, dtype=torch.long)
    cols = torch.arange(T)
    for b, p in enumerate(prompts):
        L = len(p)
        sl = slice(T - L, T) if side == "left" else slice(0, L)
        ids[b, sl] = torch.tensor(list(p))
        valid[b, sl] = True
        if mode == "mask":
            positions[b, sl] = torch.arange(L)
        elif mode == "mask_shift":
            positions[b, sl] = cols[sl]
        else:
            positions[b] = cols
    return PaddedBatch(ids, positions, valid, lengths, side)


# ---- outputs -----------------------------------------------------------------------------------
@torch.inference_mode()
def padded_hidden(engine: Engine, batch: PaddedBatch) -> torch.Tensor:
    """Final hidden states (B, T, D) of a padded batch."""
    x = batch.ids.to(engine.device)
    cache = engine.new_cache(x.shape[0], x.shape[1])
    return engine.forward(x, cache, positions=batch.positions.to(engine.device), logits="none").float().cpu()


@torch.inference_mode()
def single_hidden(engine: Engine, ids) -> torch.Tensor:
    """Final hidden states (L, D) of one prompt run alone."""
    x = torch.tensor([list(ids)], device=engine.device)
    return engine.forward(x, engine.new_cache(1, x.shape[1]), logits="none")[0].float().cpu()


def segment_hook(segments: torch.Tensor):
    """A "scores" hook that lets a query see only keys of its own segment (packing).
    segments: (S,) prompt index of every packed token."""
    same = segments[:, None] == segments[None, :]                          # (S, S)

    def hook(layer, scores):                                              # (1, H, T, S)
        T = scores.shape[2]
        return scores.masked_fill(~same[-T:].to(scores.device), torch.finfo(scores.dtype).min)
    return hook


def packed_inputs(prompts) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """ids (1, N), positions (1, N) restarting at 0 per prompt, segments (N,)."""
    ids = torch.tensor([[t for p in prompts for t in p]])
    pos = torch.tensor([[i for p in prompts for i in range(len(p))]])
    seg = torch.tensor([b for b, p in enumerate(prompts) for _ in p])
    return ids, pos, seg


@torch.inference_mode()
def packed_hidden(engine: Engine, prompts) -> torch.Tensor:
    """Final hidden states (N, D) of all prompts packed into one row."""
    ids, pos, seg = packed_inputs(prompts)
    cache = engine.new_cache(1, ids.shape[1])
    return engine.forward(ids.to(engine.device), cache, positions=pos.to(engine.device),
                          hooks={"scores": segment_hook(seg)}, logits="none")[0].float().cpu()


@dataclass
class VariantResult:
    side: str
    mode: str
    max_hidden_diff: float    # max |h - h_alone| over all real tokens of all prompts
    max_logit_diff: float     # max |next-token logits - alone| over the prompts
    top1_changed: int         # prompts whose predicted next token differs from running alone
    top1_ids: tuple[int, ...]


@dataclass
class MaskComparison:
    alone_top1: tuple[int, ...]
    variants: list[VariantResult]
    packed_hidden_diff: float
    packed_logit_diff: float


def compare_variants(engine: Engine, prompts, pad_id: int) -> MaskComparison:
    """Every (side, position mode) and the packed row against each prompt run alone."""
    alone = [single_hidden(engine, p) for p in prompts]                     # (L_b, D) each
    alone_logits = torch.stack([engine.head(h[-1]) for h in alone])     # (B, V)
    alone_top1 = tuple(int(i) for i in alone_logits.argmax(-1))

    def measure(per_prompt_hidden):
        hd = max(float((h - a).abs().max()) for h, a in zip(per_prompt_hidden, alone))
        logits = torch.stack([engine.head(h[-1]) for h in per_prompt_hidden])
        top1 = tuple(int(i) for i in logits.argmax(-1))
        return hd, float((logits - alone_logits).abs().max()), sum(a != b for a, b in zip(top1, alone_top1)), top1

    variants = []
    for side in SIDES:
        for mode in POSITION_MODES:
            if side == "right" and mode == "mask_shift":
                continue        # right padding: column index = position already (same as "mask")
            batch = pad_batch(prompts, pad_id, side, mode)
            h = padded_hidden(engine, batch)                                 # (B, T, D)
            rows = [h[b][batch.valid[b]] for b in range(len(prompts))]      # (L_b, D) each
            variants.append(VariantResult(side, mode, *measure(rows)))
    packed = packed_hidden(engine, prompts)
    rows = list(packed.split([len(p) for p in prompts]))
    phd, pld, _, _ = measure(rows)
    return MaskComparison(alone_top1, variants, phd, pld)


# ---- time -------------------------------------------------------------------------------------
@dataclass
class Timings:
    labels: list[str]          # what was run
    tokens: list[int]          # token rows each forward processed (B x T, or sum of lengths)
    score_entries: list[int]   # attention score entries per head per layer (B x T x S summed)
    seconds: list[float]       # median wall time of each run
    fastest: list[float]       # min wall time of each run over the repeats
    slowest: list[float]       # max wall time of each run over the repeats
    repeats: int
    load_avg: float            # the machine's 1-minute load average after measuring
    cpus: int = 1              # the machine's cores (the load average is judged per core)


@torch.inference_mode()
def measure_times(engine: Engine, prompts, pad_id: int, extra_pad: tuple[int, ...] = (0,),
                  repeats: int = 3, padded_only: bool = False) -> Timings:
    """Median wall time of: the padded batch (padded to the longest + each extra), the prompts
    one by one, and the packed row (not with `padded_only`). Each run is timed with
    lib.core.timing.measure: alone (no other model work in this process meanwhile), `repeats`
    times after one warm-up, median and spread. Hidden states only (no LM head)."""
    L = [len(p) for p in prompts]
    B, Tmax = len(L), max(L)
    runs, labels, tokens, entries = [], [], [], []
    for extra in extra_pad:
        batch = pad_batch(prompts, pad_id, "left", "mask", Tmax + int(extra))
        runs.append(lambda b=batch: padded_hidden(engine, b))
        labels.append(f"padded:{Tmax + int(extra)}")
        tokens.append(B * (Tmax + int(extra)))
        entries.append(B * (Tmax + int(extra)) ** 2)
    if not padded_only:
        runs.append(lambda: [single_hidden(engine, p) for p in prompts])
        labels.append("one_by_one")
        tokens.append(sum(L))
        entries.append(sum(n * n for n in L))
        runs.append(lambda: packed_hidden(engine, prompts))
        labels.append("packed")
        tokens.append(sum(L))
        entries.append(sum(L) ** 2)
    timings = [measure(run, repeats) for run in runs]
    return Timings(labels, tokens, entries, [x.median_s for x in timings], [x.min_s for x in timings],
                   [x.max_s for x in timings],
                   repeats, timings[-1].load_avg, timings[-1].cpus)


def with_padded(base: Timings, more: Timings) -> Timings:
    """`base` (measure_times) with the padded runs of `more` (measure_times(..., padded_only=True))
    after its own padded runs: a page that changes only the extra padding measures only that
    run. Each run keeps its own median and spread; the load is the higher of the two."""
    k = sum(lab.startswith("padded:") for lab in base.labels)
    if base.repeats != more.repeats or any(not lab.startswith("padded:") for lab in more.labels):
        raise ValueError("with_padded needs padded runs measured with the same repeats")

    def join(a: list, b: list) -> list:
        return a[:k] + b + a[k:]
    return Timings(join(base.labels, more.labels), join(base.tokens, more.tokens),
                   join(base.score_entries, more.score_entries), join(base.seconds, more.seconds),
                   join(base.fastest, more.fastest), join(base.slowest, more.slowest), base.repeats,
                   max(base.load_avg, more.load_avg), max(base.cpus, more.cpus))


def time_ratio(t: Timings) -> tuple[float, float]:
    """(time ratio, padded-token ratio) of the most-padded run vs the least-padded one: time
    tracks padding if the time ratio is well above 1 although the real tokens are the same."""
    pads = [i for i, lab in enumerate(t.labels) if lab.startswith("padded:")]
    a, b = pads[0], pads[-1]
    return t.seconds[b] / t.seconds[a], t.tokens[b] / t.tokens[a]


def padded_view(batch: PaddedBatch) -> np.ndarray:
    """(B, T) 1 on real tokens, 0 on padding (for the picture)."""
    return batch.valid.int().numpy()
