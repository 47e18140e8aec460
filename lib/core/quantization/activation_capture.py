"""Read real activations out of the engine, and run it again with some of them replaced.

Capture points (engine hook names, all (B, T, C) with C channels):

    "attn_in"   RMSNorm output that feeds q/k/v           C = hidden (640)
    "mlp_in"    RMSNorm output that feeds gate/up          C = hidden (640)
    "mlp_act"   gelu(gate) * up, the down-projection input C = intermediate (2048)
    "resid_out" the residual stream after the layer        C = hidden (640)

Injection = a hook that returns a replaced tensor at one (point, layer): the rest of the
forward pass runs on the replaced values, so we can measure what quantizing (or clipping)
that activation does to the next-token distributions (KL) and to perplexity on the text.

The first position (BOS) is excluded from statistics and left untouched by injection: it
carries the model's attention-sink state with its own huge values, a different story.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from lib.core.engine import Engine
from lib.core.hooks import Recorder

POINTS = ("mlp_act", "resid_out", "attn_in", "mlp_in")
SKIP = 1  # leading positions (BOS) excluded from stats and injection


@dataclass
class Capture:
    acts: dict[str, torch.Tensor]   # point -> (L, T - SKIP, C) float32 activations of every layer
    hidden: torch.Tensor            # (T, D) final hidden states of the unmodified run


@dataclass(frozen=True)
class Effect:
    kl_mean: float       # mean over positions of KL(p_ref || p_new), nats
    kl_max: float
    ppl_ref: float       # perplexity of the text's own next tokens, unmodified model
    ppl_new: float       # ... with the activation replaced
    top1_agree: float    # fraction of positions where both runs predict the same top token


def capture(engine: Engine, ids: tuple[int, ...], points: tuple[str, ...] = POINTS) -> Capture:
    """One forward over ids (1 sequence) recording `points` at every layer."""
    x = torch.tensor([list(ids)], device=engine.device)                     # (1, T)
    rec = Recorder(points)
    hidden = engine.forward(x, engine.new_cache(capacity=len(ids)), hooks=rec.hooks(), logits="none")
    acts = {p: torch.stack([rec[(p, l)][0, SKIP:].float() for l in range(engine.spec.n_layers)])
            for p in points}                                                # (L, T-1, C)
    return Capture(acts, hidden[0].float().cpu())


def channel_max(acts: torch.Tensor) -> torch.Tensor:
    """max |x| of every channel over the tokens: (T, C) -> (C,)."""
    return acts.abs().amax(dim=0)


def outlier_channels(acts: torch.Tensor, factor: float = 6.0) -> torch.Tensor:
    """Channels whose max |x| exceeds `factor` times the median channel max (LLM.int8()-style)."""
    cm = channel_max(acts)
    return torch.nonzero(cm > factor * cm.median()).flatten()


def injection_hooks(point: str, layer: int, transform: Callable[[torch.Tensor], torch.Tensor]) -> dict:
    """Hooks that replace activation `point` of `layer` by transform(x[SKIP:]) ((T', C) -> (T', C))."""
    def hook(l, x):                                                         # x (B, T, C)
        if l != layer:
            return None
        out = x.clone()
        out[0, SKIP:] = transform(x[0, SKIP:]).to(x.dtype)
        return out
    return {point: hook}


def run_with_hooks(engine: Engine, ids: tuple[int, ...], hooks: dict) -> torch.Tensor:
    """Final hidden states (T, D) of one forward with `hooks` installed."""
    x = torch.tensor([list(ids)], device=engine.device)
    return engine.forward(x, engine.new_cache(capacity=len(ids)), hooks=hooks, logits="none")[0].float().cpu()


def compare_runs(engine: Engine, ids: tuple[int, ...], h_ref: torch.Tensor, h_runs: list[torch.Tensor]) -> list[Effect]:
    """Each run against the reference: KL(p_ref || p_run) at every position and the perplexity
    of the text's next tokens in both. h_ref and every h_run are final hidden states (T, D).
    All runs go through the LM head together, one vocabulary chunk at a time
    (Engine.head_compare: the int8 vocabulary matrix expanded once for all of them, no (T, V)
    logits), in float64 as log_softmax over the whole logits would be."""
    T = h_ref.shape[0]
    targets = torch.tensor(list(ids[1:]) + [0])                              # (T,) next token; the last has none
    x = torch.cat([h_ref, *h_runs]).to(engine.device, engine.dtype)          # ((K + 1) T, D)
    kl, nll_ref, nll, agree = engine.head_compare(x, T, targets)             # (K, T), (T,), (K, T), (K, T)
    ppl = lambda v: float(torch.exp(v[:-1].mean())) if T > 1 else float("nan")  # noqa: E731
    return [Effect(float(kl[k].mean()), float(kl[k].max()), ppl(nll_ref), ppl(nll[k]), float(agree[k].double().mean()))
            for k in range(len(h_runs))]


def compare(engine: Engine, ids: tuple[int, ...], h_ref: torch.Tensor, h_new: torch.Tensor) -> Effect:
    """KL(p_ref || p_new) at every position and perplexity of the text's next tokens in both runs
    (compare_runs with one run)."""
    return compare_runs(engine, ids, h_ref, [h_new])[0]


def effect_of(engine: Engine, ids: tuple[int, ...], h_ref: torch.Tensor, point: str, layer: int,
              transform: Callable[[torch.Tensor], torch.Tensor]) -> Effect:
    """Run the model with `point` of `layer` replaced by transform(x) and compare with h_ref."""
    h_new = run_with_hooks(engine, ids, injection_hooks(point, layer, transform))
    return compare(engine, ids, h_ref, h_new)


@dataclass(frozen=True)
class InjectionRow:
    kind: str            # a granularity ("tensor", "token", "channel", "group"), "clip" or "clip_tensor"
    effect: Effect
    sqnr_db: float       # of the replaced activation against the original


EXPERIMENTS = ("tensor", "token", "channel", "group", "clip", "clip_tensor")


def experiment(kind: str, bits: int, group_size: int, clip_at: float) -> Callable[[torch.Tensor], torch.Tensor]:
    """The transform one experiment applies to the activation: a granularity (int`bits`
    quantization with that scale choice), "clip" (clamp to ±clip_at) or "clip_tensor" (clip,
    then int`bits` per tensor)."""
    from lib.core.quantization.quantize import QuantSpec, clip, fake_quantize

    if kind == "clip":
        return lambda x: clip(x, clip_at)
    if kind == "clip_tensor":
        return lambda x: fake_quantize(clip(x, clip_at), QuantSpec(bits, "tensor", True, group_size))
    return lambda x: fake_quantize(x, QuantSpec(bits, kind, True, group_size))


# What each experiment's transform reads of (bits, group_size, clip_at).
READS = {"tensor": ("bits",), "token": ("bits",), "channel": ("bits",), "group": ("bits", "group_size"),
         "clip": ("clip_at",), "clip_tensor": ("bits", "clip_at")}
UNREAD = {"bits": 8, "group_size": 64, "clip_at": 1.0}    # stands in for a setting an experiment does not read


def experiment_groups(bits: int, group_size: int, clip_at: float, kinds: tuple[str, ...] = EXPERIMENTS):
    """The experiments grouped by the settings they read: [(kinds, bits, group_size, clip_at)],
    with UNREAD in place of a setting no experiment of the group reads. One cached
    `injection_rows` call per group is computed again only when a setting it reads changes (a
    new group size reruns one forward, not six); `injection_rows(..., *group)` for each group
    gives the rows of `injection_rows(..., bits, group_size, clip_at, kinds)`."""
    given = {"bits": bits, "group_size": group_size, "clip_at": clip_at}
    groups: dict[tuple[str, ...], list[str]] = {}
    for k in kinds:
        groups.setdefault(READS[k], []).append(k)
    return [(tuple(ks), *(given[a] if a in reads else UNREAD[a] for a in ("bits", "group_size", "clip_at")))
            for reads, ks in groups.items()]


def injection_rows(engine: Engine, ids: tuple[int, ...], h_ref: torch.Tensor, acts: torch.Tensor,
                   point: str, layer: int, bits: int, group_size: int, clip_at: float,
                   kinds: tuple[str, ...] = EXPERIMENTS, _progress=None) -> list[InjectionRow]:
    """Replace `point` of `layer` by each experiment's version of it (`experiment`) and measure
    the effects: one forward per experiment, then all of them through the LM head together
    (compare_runs). acts: (T - SKIP, C), the captured activation (for the SQNR column).
    `_progress(done, total)` after each forward (left out of cache keys)."""
    from lib.core.quantization.quantize import error_stats

    fns = [experiment(k, bits, group_size, clip_at) for k in kinds]
    h_runs = []
    for i, fn in enumerate(fns):
        h_runs.append(run_with_hooks(engine, ids, injection_hooks(point, layer, fn)))
        if _progress is not None:
            _progress(i + 1, len(fns))
    effects = compare_runs(engine, ids, h_ref, h_runs)
    return [InjectionRow(k, e, error_stats(acts, fn(acts.clone())).sqnr_db) for k, e, fn in zip(kinds, effects, fns)]


def injection_row(engine: Engine, ids: tuple[int, ...], h_ref: torch.Tensor, acts: torch.Tensor,
                  point: str, layer: int, bits: int, group_size: int, clip_at: float, kind: str) -> InjectionRow:
    """injection_rows for one experiment."""
    return injection_rows(engine, ids, h_ref, acts, point, layer, bits, group_size, clip_at, (kind,))[0]
