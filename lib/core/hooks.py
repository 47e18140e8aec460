"""Hooks for reading activations out of the engine (see the hook names in lib.core.engine)."""
from __future__ import annotations

import torch


class Recorder:
    """Collects activations by (name, layer) during one forward.

    rec = Recorder({"probs", "q"}, layers={5})
    engine.forward(ids, cache, hooks=rec.hooks())
    rec[("probs", 5)]   # (B, H, T, S), a CPU copy
    """

    def __init__(self, names, layers=None):
        self.names, self.layers = set(names), None if layers is None else set(layers)
        self.store: dict[tuple[str, int], torch.Tensor] = {}

    def hooks(self) -> dict:
        def make(name):
            def read(layer, x):
                if self.layers is None or layer in self.layers:
                    self.store[(name, layer)] = x.detach().to("cpu", copy=True)
            return read
        return {n: make(n) for n in self.names}

    def __getitem__(self, key):
        return self.store[key]
