"""A real KV cache's bytes, for the memory calculator to be compared with (issue 32).

`engine_cache_bytes(engine, ids)` prefills the first MAX_TOKENS of `ids` through the engine into a cache made for
exactly that many tokens (engine.new_cache) and returns the bytes of the storage its key,
value and position tensors really occupy (`untyped_storage().nbytes()`, each storage counted
once), with the token count. Nothing here uses the calculator's formula: a calculator that
forgets the values, the positions, a layer or the head dimension disagrees with it.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class CacheBytes:
    tokens: int
    allocated: int       # bytes of the distinct storages behind keys, values and positions


MAX_TOKENS = 32      # the first 32 prefill tokens: the bytes are exact at any length, the cost stays small


def engine_cache_bytes(engine, ids: tuple[int, ...], max_tokens: int = MAX_TOKENS) -> CacheBytes:
    """ids: prompt tokens (the first max_tokens are prefilled)."""
    x = torch.tensor([list(ids)[:max_tokens]], device=engine.device)        # (1, T)
    cache = engine.new_cache(capacity=x.shape[1])
    engine.forward(x, cache, logits="none")
    seen, total = set(), 0
    for l in range(engine.spec.n_layers):
        for tensor in (cache.keys(l), cache.values(l), cache.positions(l)):
            st = tensor.untyped_storage()
            if st.data_ptr() not in seen:
                seen.add(st.data_ptr())
                total += st.nbytes()
    return CacheBytes(x.shape[1], total)
