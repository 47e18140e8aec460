"""The model's own sliding window, exercised: a text longer than the local window run through
a real ring-buffer cache (lib.core.cache.ring.RingKVCache: local layers keep only their last
`window + chunk - 1` entries, older slots are overwritten) against the dense cache that keeps
everything. If the engine's local-layer window were off by one, the dense run would read an
entry the ring has already overwritten, and the logits would part.

Contract: `ring_matches_dense(engine, ids, chunk)` -> RingParity; `ids` longer than the
local window; the ring is fed `chunk` tokens at a time."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.core.cache import policy as cp
from lib.core.cache import ring as rc


@dataclass
class RingParity:
    n: int                # tokens run
    compared: int         # positions compared (those past the local window)
    max_diff: float       # max |logits(ring) − logits(dense)| over them
    scale: float          # max |logits(dense)| over them
    ring_bytes: int       # RingKVCache.nbytes(): storage actually allocated
    dense_bytes: int      # KVCache.nbytes() of the dense run: entries actually held
    formula_bytes: int    # policy.kv_bytes: local layers window + chunk − 1 entries, global layers n
    window: int           # the model's local window
    chunk: int

    @property
    def rel_diff(self) -> float:
        return self.max_diff / max(self.scale, 1e-30)


@torch.inference_mode()
def ring_matches_dense(engine, ids: tuple[int, ...], chunk: int = 32) -> RingParity:
    spec = engine.spec
    local = [w for w in spec.windows if w is not None]
    if not local:
        raise ValueError("the model has no sliding-window layers")
    W = max(local)
    n = len(ids)
    if n <= W:
        raise ValueError(f"need more than {W} tokens to leave the window, got {n}")
    x = torch.tensor([list(ids)], device=engine.device)                                   # (1, n)
    dense = engine.new_cache(1, n)
    ref = engine.forward(x, dense, logits="none")[0, W:]                                  # (n - W, D) final hidden
    ring = rc.RingKVCache(spec, 1, n, chunk=chunk, dtype=engine.dtype, device=engine.device)
    outs = []
    for s in range(0, n, chunk):
        out = engine.forward(x[:, s:s + chunk], ring, logits="none")[0]                 # (c, D)
        outs.append(out[max(W - s, 0):])
    got = torch.cat(outs)                                                                 # (n - W, D)
    max_diff, scale = engine.head_max_diff(got, ref)      # logits 16 rows at a time, not two (n − W, V)
    bpe = torch.empty((), dtype=engine.dtype).element_size()
    return RingParity(n, got.shape[0], max_diff, scale, ring.nbytes(),
                      dense.nbytes(), cp.kv_bytes(cp.window(W + chunk - 1, "local"), spec, n, bpe), W, chunk)
