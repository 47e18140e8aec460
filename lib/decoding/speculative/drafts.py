"""Drafts for speculative decoding: cheap proposers of the next few tokens.

A draft keeps its own state (its KV cache), never the target's. The decoder calls

    draft.reset(prompt_ids)                          once per run
    tokens, q = draft.propose(context, gamma, cfg, gen)
        context: every committed token so far (the last one not yet seen by the target)
        tokens:  up to gamma proposed ids; q: (len(tokens), V) the distribution each came from
    draft.rollback(n)                                the committed context now has n tokens

Three kinds, all offline with the bundled model:
  EngineDraft(engine)                 any model that shares the tokenizer (a second Engine)
  EngineDraft(engine, n_layers=k)     early exit: the same model's first k layers + final norm
                                      + LM head (optionally an LM head over a vocabulary subset)
  PromptLookupDraft(max_ngram)        n-gram match in the context, continuation copied (q one-hot)

An early-exit draft may start from `EarlyExits`, the one forward over the prompt that gives
every k's first distribution: its cache already holds the prompt in every layer, so the first
proposal needs no forward at all (the cache is shared the way LayerSkip shares it: the first
k layers of the target's K/V are the draft's K/V).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from lib.core.cache.dense import KVCache
from lib.core.engine import Engine
from lib.core.layer import linear, rms_norm, soft_cap
from lib.decoding.sampling import SamplingConfig, run_pipeline, sample_next


class _ExitEarly(Exception):
    """Raised by the early-exit hook to stop the forward after layer k - 1."""

    def __init__(self, x: torch.Tensor):
        self.x = x


def head_logits(engine: Engine, x: torch.Tensor, vocab_subset: torch.Tensor | None = None,
                head_t: torch.Tensor | None = None) -> torch.Tensor:
    """final norm + LM head (+ softcap) on hidden states x (..., D) -> logits (..., V).
    With a vocabulary subset only those columns are computed; every other token gets -inf."""
    spec = engine.spec
    h = rms_norm(x, engine.final_norm, spec.rms_eps, spec.norm_offset)
    if head_t is None:
        return engine.head(h)                                               # (..., V)
    out = linear(h, head_t)                                                 # (..., Vs)
    out = soft_cap(out, spec.final_softcap)
    if vocab_subset is None:
        return out
    full = out.new_full((*out.shape[:-1], spec.vocab), float("-inf"))       # (..., V)
    full[..., vocab_subset] = out
    return full


def early_exit_forward(engine: Engine, ids: torch.Tensor, cache, n_layers: int,
                       vocab_subset: torch.Tensor | None = None, head_t: torch.Tensor | None = None,
                       logits: str = "last") -> torch.Tensor:
    """The first n_layers layers of `engine`, then its final norm and LM head. ids (B, T)."""
    if n_layers >= engine.spec.n_layers:
        x = engine.forward(ids, cache, logits="none")                          # (B, T, D)
    else:
        def stop(layer, x):
            if layer == n_layers - 1:
                raise _ExitEarly(x)
        try:
            engine.forward(ids, cache, hooks={"resid_out": stop}, logits="none")
            raise RuntimeError("early exit hook did not fire")
        except _ExitEarly as e:
            x = e.x                                                             # (B, T, D)
    if logits == "last":
        x = x[:, -1:]
    with torch.inference_mode():
        return head_logits(engine, x, vocab_subset, head_t)                   # (B, T', V)


class EngineDraft:
    """A model draft: a second Engine, or the target's own first `n_layers` (early exit)."""
    deterministic = False

    def __init__(self, engine: Engine, n_layers: int | None = None, vocab_subset=None, name: str = "",
                 after_prompt: tuple[KVCache, torch.Tensor] | None = None):
        """`after_prompt`: (a cache holding every prompt token in at least the first n_layers
        layers, this draft's logits (V,) after the prompt), e.g. from `EarlyExits.for_draft`:
        the run's first proposal is then drawn without a forward. Used once, by `reset`."""
        self.engine = engine
        self.after_prompt = after_prompt
        self.n_layers = n_layers or engine.spec.n_layers
        self.vocab_subset = None if vocab_subset is None else torch.as_tensor(sorted(set(vocab_subset)))
        self.head_t = None if self.vocab_subset is None else engine.lm_head.columns(self.vocab_subset)
        self.name = name or (f"early exit k={self.n_layers}" if n_layers else "draft model")
        self.cache = None
        self.seconds = 0.0          # wall time spent in draft forwards
        self.forwards = 0           # draft forward calls

    def reset(self, prompt_ids) -> None:
        self.cache, self.next_logits = self.engine.new_cache(capacity=len(prompt_ids) + 128), None
        if self.after_prompt is not None and self.after_prompt[0].length(0) == len(prompt_ids):
            cache, self.next_logits = self.after_prompt
            self.cache = cache.clone()                  # the draft appends to its own copy
        self.after_prompt = None
        self.seconds, self.forwards = 0.0, 0

    def _logits(self, ids: list[int]) -> torch.Tensor:
        t0 = time.perf_counter()
        x = torch.tensor([ids], device=self.engine.device)                     # (1, T)
        out = early_exit_forward(self.engine, x, self.cache, self.n_layers, self.vocab_subset, self.head_t)
        self.seconds += time.perf_counter() - t0
        self.forwards += 1
        return out[0, -1].float().cpu()                                        # (V,)

    def propose(self, context: list[int], gamma: int, cfg: SamplingConfig, gen: torch.Generator):
        """gamma tokens, each sampled from q = pipeline(draft logits); the draft's cache catches
        up with every committed token it has not seen yet in the first forward."""
        if gamma <= 0:
            return [], None
        seen = self.cache.length(0)
        if self.next_logits is not None and seen == len(context):    # primed: the prompt's logits are known
            logits, self.next_logits = self.next_logits, None
        else:
            logits = self._logits(list(context[seen:]))
        tokens, qs = [], []
        for i in range(gamma):
            q = run_pipeline(logits, cfg).probs                                 # (V,)
            x = sample_next(q, gen)
            tokens.append(x)
            qs.append(q)
            if i < gamma - 1:
                logits = self._logits([x])
        return tokens, torch.stack(qs)                                          # (gamma,), (gamma, V)

    def rollback(self, n_committed: int) -> None:
        """Drop cached entries beyond the committed context minus its last (pending) token."""
        self.cache.crop(min(self.cache.length(0), n_committed - 1))


class PromptLookupDraft:
    """Prompt lookup: find the most recent earlier occurrence of the context's last n tokens
    (n = max_ngram down to min_ngram) and propose the tokens that followed it. Costs no model
    call; q is one-hot on each proposal (a deterministic draft), so acceptance = p(x)."""
    deterministic = True

    def __init__(self, vocab: int, max_ngram: int = 3, min_ngram: int = 1, name: str = ""):
        self.vocab, self.max_ngram, self.min_ngram = vocab, max_ngram, min_ngram
        self.name = name or f"prompt lookup n≤{max_ngram}"
        self.seconds, self.forwards = 0.0, 0

    def reset(self, prompt_ids) -> None:
        self.seconds, self.forwards = 0.0, 0

    def lookup(self, context: list[int], gamma: int) -> list[int]:
        """The continuation of the latest earlier match of the longest suffix n-gram."""
        L = len(context)
        for n in range(min(self.max_ngram, L - 1), self.min_ngram - 1, -1):
            suffix = context[L - n:]
            for start in range(L - n - 1, -1, -1):                  # latest match first
                if context[start:start + n] == suffix:
                    return context[start + n:start + n + gamma]
        return []

    def propose(self, context: list[int], gamma: int, cfg: SamplingConfig, gen: torch.Generator):
        t0 = time.perf_counter()
        tokens = self.lookup(list(context), gamma) if gamma > 0 else []
        q = None
        if tokens:
            q = torch.zeros(len(tokens), self.vocab)                             # (n, V) one-hot
            q[torch.arange(len(tokens)), torch.tensor(tokens)] = 1.0
        self.seconds += time.perf_counter() - t0
        return tokens, q

    def rollback(self, n_committed: int) -> None:
        pass


def frequent_tokens(tokenizer, texts, extra_ids=()) -> tuple[int, ...]:
    """The vocabulary subset for a cheap early-exit head: every token id that occurs in
    `texts` (e.g. the offline long text) plus `extra_ids` (e.g. the prompt)."""
    ids = set(int(i) for i in extra_ids)
    for t in texts:
        ids.update(tokenizer(t, add_special_tokens=True)["input_ids"])
    return tuple(sorted(ids))


@dataclass
class EarlyExits:
    """One forward over a prompt, kept for everything that starts right after it."""
    final: torch.Tensor     # (V,) the target's logits after the prompt
    logits: torch.Tensor    # (L, V) the early-exit draft's logits after the prompt, row k-1 for k layers
    cache: KVCache          # every prompt token's K/V, in every layer

    def for_target(self) -> tuple[KVCache, torch.Tensor]:
        """What SpeculativeDecoder.start(primed=...) takes: the cache and the target's logits."""
        return self.cache, self.final

    def for_draft(self, n_layers: int) -> tuple[KVCache, torch.Tensor]:
        """What EngineDraft(after_prompt=...) takes for the first n_layers layers."""
        return self.cache, self.logits[n_layers - 1]


def early_exit_logits(engine: Engine, prompt_ids) -> EarlyExits:
    """At the position after `prompt_ids`: the target's logits (V,) and the early-exit draft's
    for every k = 1..n_layers (n_layers, V), from ONE forward (the residual stream after each
    layer goes through the final norm + LM head, all layers' rows in one head call), and the
    K/V cache that forward filled."""
    last: dict[int, torch.Tensor] = {}

    def keep(layer, x):
        last[layer] = x[:, -1]                                                   # (1, D)

    ids = torch.tensor([list(prompt_ids)], device=engine.device)               # (1, T)
    cache = engine.new_cache(capacity=ids.shape[1])
    final = engine.forward(ids, cache, hooks={"resid_out": keep}, logits="last")[0, -1].float().cpu()  # (V,)
    h = torch.cat([last[l] for l in range(engine.spec.n_layers)])              # (L, D)
    with torch.inference_mode():
        logits = head_logits(engine, h).float().cpu()                          # (L, V)
    return EarlyExits(final, logits, cache)


def early_exit_distributions(engine: Engine, prompt_ids, cfg: SamplingConfig,
                             _exits: EarlyExits | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """At the position after `prompt_ids`: the target's p (V,) and the early-exit draft's q for
    every k = 1..n_layers (n_layers, V), all through the same sampling pipeline, from ONE
    forward (early_exit_logits; `_exits`: its result, if already computed — a change of the
    sampling settings then reruns only the pipelines)."""
    exits = _exits if _exits is not None else early_exit_logits(engine, prompt_ids)
    p = run_pipeline(exits.final, cfg).probs
    qs = torch.stack([run_pipeline(exits.logits[l], cfg).probs for l in range(len(exits.logits))])
    return p, qs                                                                # (V,), (L, V)
