"""Greedy text generated under a cache policy, after reading a prompt under that policy.

The prompt runs in one masked forward (same numbers as token-by-token eviction), the cache is
then cut to the policy's state (`kv_eviction.adopt`), and each new token evicts for real.
Recompute has no cache: each step re-encodes the last W tokens from scratch.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.core.cache.policy import CachePolicy
from lib.decoding.generate import StepRecord
from lib.core.cache.evicting import adopt, report, step
from lib.concepts.cache_policies.policy_masks import policy_hooks


@dataclass
class PolicyGeneration:
    label: str
    steps: list[StepRecord]
    cache_bytes: int                 # KV bytes held after the last step (0 for recompute)


def _record(logits: torch.Tensor, top_n: int = 5) -> StepRecord:
    p = torch.softmax(logits.float().cpu(), -1)                     # (V,)
    tok = int(p.argmax())
    top = torch.topk(p, top_n).indices.tolist()
    return StepRecord(tok, float(p[tok]), float(p[tok]), 0, 1, [(i, float(p[i]), float(p[i])) for i in top])


@torch.inference_mode()
def greedy_under(engine, prompt_ids: tuple[int, ...], policy: CachePolicy, n_new: int,
                 eos_ids: tuple[int, ...] = (), _progress=None) -> PolicyGeneration:
    ids = list(prompt_ids)
    steps: list[StepRecord] = []
    if policy.kind == "recompute":
        w = policy.window
        for i in range(n_new):
            win = torch.tensor([ids[-w:]], device=engine.device)
            steps.append(_record(engine.forward(win, engine.new_cache(1, w))[0, -1]))
            ids.append(steps[-1].token)
            report(_progress, i + 1, n_new)
            if steps[-1].token in eos_ids:
                break
        return PolicyGeneration(policy.label, steps, 0)
    cache = engine.new_cache(1, capacity=len(ids) + n_new)
    logits = engine.forward(torch.tensor([ids], device=engine.device), cache,
                            hooks=policy_hooks(engine, cache, policy))[0, -1]
    ec = adopt(engine, cache, policy, len(ids))
    for i in range(n_new):
        steps.append(_record(logits))
        report(_progress, i + 1, n_new)
        if steps[-1].token in eos_ids or i == n_new - 1:
            break
        logits = step(ec, engine, steps[-1].token)[0, -1]
    return PolicyGeneration(policy.label, steps, ec.cache.nbytes())
