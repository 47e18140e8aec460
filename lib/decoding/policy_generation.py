"""Greedy text generated under a cache policy, after reading a prompt under that policy.

The prompt runs in one masked forward (same numbers as token-by-token eviction), the cache is
then cut to the policy's state (`kv_eviction.adopt`), and each new token evicts for real.
Recompute has no cache: each step re-encodes the last W tokens from scratch.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.core.cache.policy import CachePolicy
from lib.decoding.generate import StepRecord, decode_loop, describe_step
from lib.decoding.sampling import SamplingConfig
from lib.core.cache.evicting import adopt, report, step
from lib.core.cache.policy_masks import policy_hooks


@dataclass
class PolicyGeneration:
    label: str
    steps: list[StepRecord]
    cache_bytes: int                 # KV bytes held after the last step (0 for recompute)


class PolicyStepper:
    """The decode loop's stepper (lib/decoding/generate.py) under a cache policy: the prompt
    in one masked forward, the cache cut to the policy's state, then real eviction per token.
    Recompute keeps no cache: every step re-encodes the last W tokens from scratch."""

    def __init__(self, engine, policy: CachePolicy, capacity: int):
        self.engine, self.policy, self.capacity = engine, policy, capacity
        self.ids: list[int] = []
        self.evicting = None                       # the EvictingCache after the prompt

    def _window(self) -> torch.Tensor:             # recompute: the last W tokens, fresh cache
        w = self.policy.window
        return self.engine.forward(torch.tensor([self.ids[-w:]], device=self.engine.device),
                                   self.engine.new_cache(1, w))[0, -1]

    def prefill(self, ids: list[int]) -> torch.Tensor:
        self.ids = list(ids)
        if self.policy.kind == "recompute":
            return self._window()
        cache = self.engine.new_cache(1, capacity=self.capacity)
        logits = self.engine.forward(torch.tensor([self.ids], device=self.engine.device), cache,
                                     hooks=policy_hooks(self.engine, cache, self.policy))[0, -1]
        self.evicting = adopt(self.engine, cache, self.policy, len(self.ids))
        return logits

    def decode(self, token: int) -> torch.Tensor:
        self.ids.append(token)
        if self.policy.kind == "recompute":
            return self._window()
        return step(self.evicting, self.engine, token)[0, -1]

    def cache_bytes(self) -> int:
        return self.evicting.cache.nbytes() if self.evicting is not None else 0


@torch.inference_mode()
def greedy_under(engine, prompt_ids: tuple[int, ...], policy: CachePolicy, n_new: int,
                 eos_ids: tuple[int, ...] = (), _progress=None) -> PolicyGeneration:
    """Greedy generation (the one decode loop, T = 0) with the cache kept by `policy`."""
    stepper = PolicyStepper(engine, policy, capacity=len(prompt_ids) + n_new)
    steps: list[StepRecord] = []

    def record(raw, res, token):
        steps.append(describe_step(raw, res, token))
        report(_progress, len(steps), n_new)

    decode_loop(stepper, prompt_ids, SamplingConfig(0.0), 0, n_new, eos_ids, on_step=record)
    return PolicyGeneration(policy.label, steps, stepper.cache_bytes())
