"""How much attention each layer and head puts on the first positions of a real text.

For every query q >= q_from (so that it has plenty of other keys to choose from) and every
head, the share of its attention weight that lands on positions 0..first-1 is averaged:

    mass[l, h, j] = mean_q  probs[l, h, q, j]        j < first

If attention were spread evenly over the keys a query can see, position j would get
1 / (number of visible keys); `uniform` reports that baseline for comparison.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lib.core.cache.evicting import report


@dataclass
class SinkMass:
    first: int
    q_from: int
    n_queries: int
    mass: np.ndarray       # (L, H, first) mean attention share on each first position
    uniform: np.ndarray    # (L,) mean share `first` positions would get under even attention

    @property
    def per_head(self) -> np.ndarray:
        """(L, H) share on all `first` positions together."""
        return self.mass.sum(-1)


@torch.inference_mode()
def sink_mass(engine, ids: tuple[int, ...], first: int = 4, q_from: int = 32, chunk: int = 128,
              _progress=None) -> SinkMass:
    """Dense forward over `ids` (the model's own attention layout), reading "probs"."""
    spec = engine.spec
    N = len(ids)
    if N <= q_from:
        raise ValueError(f"the text needs more than {q_from} tokens, got {N}")
    x = torch.tensor([list(ids)], device=engine.device)
    acc = torch.zeros(spec.n_layers, spec.n_heads, first, dtype=torch.float64)
    state = {"start": 0}

    def on_probs(layer, probs):                                    # (1, H, T, S)
        T = probs.shape[2]
        q = torch.arange(state["start"], state["start"] + T)
        sel = q >= q_from
        if sel.any():
            acc[layer] += probs[0][:, sel.to(probs.device), :first].double().sum(1).cpu()  # (H, first)

    cache = engine.new_cache(1, capacity=N)
    for s in range(0, N, chunk):
        state["start"] = s
        engine.forward(x[:, s:s + chunk], cache, hooks={"probs": on_probs}, logits="none")
        report(_progress, min(s + chunk, N), N)
    n_q = N - q_from
    q = np.arange(q_from, N)
    uniform = []
    for l in range(spec.n_layers):
        w = spec.windows[l]
        seen = q + 1 if w is None else np.minimum(q + 1, w)
        inside = np.minimum(first, np.maximum(0, first - (q + 1 - seen)))   # first positions still visible
        uniform.append(float(np.mean(inside / seen)))
    return SinkMass(first, q_from, n_q, (acc / n_q).numpy(), np.array(uniform))
