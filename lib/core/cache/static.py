"""A fixed-size KV cache and a decode step captured as a CUDA graph (the gpt-fast approach).

On a GPU, one decode step of a 270M model is ~270 small kernels: launching them from Python
costs far more than the math. A CUDA graph records the whole step once and replays it with
one launch. That needs every tensor to keep its shape and address, so this cache is
preallocated to `capacity` slots and written by position (slot = position):

    keys[l], values[l]: (B, n_kv_heads, capacity, head_dim)   positions[l]: (B, capacity)

Unwritten slots have position -1, which the engine never attends to, so attending over all
`capacity` slots gives exactly the same result as the growing KVCache (tested on the CPU).
"""
from __future__ import annotations

import torch

from lib.core.cache.protocol import PAD_POSITION


class StaticKVCache:
    def __init__(self, spec, batch: int, capacity: int, dtype=torch.float32, device="cpu"):
        shape = (batch, spec.n_kv_heads, capacity, spec.head_dim)
        self._k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(spec.n_layers)]
        self._v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(spec.n_layers)]
        self._pos = [torch.full((batch, capacity), PAD_POSITION, dtype=torch.long, device=device)
                     for _ in range(spec.n_layers)]
        self.n_layers, self.capacity = spec.n_layers, capacity
        self.next_position = 0  # only used when the caller gives no positions (prefill)

    def append(self, layer: int, k, v, pos):
        """Write k, v (B, H, T, d) into the slots named by pos (B, T); return all slots."""
        slots = pos[0]                                          # (T,) slot = position
        self._k[layer].index_copy_(2, slots, k)
        self._v[layer].index_copy_(2, slots, v)
        self._pos[layer].index_copy_(1, slots, pos)
        return self._k[layer], self._v[layer], self._pos[layer]

    def advance(self, positions) -> None:
        """No host sync (CUDA-graph safe): the caller owns the position counter."""

    def nbytes(self) -> int:
        return sum(t.nbytes for t in self._k + self._v)


class GraphedGreedyDecoder:
    """Greedy decoding where each step is one CUDA-graph replay (falls back to plain calls
    on the CPU, where graphs do not exist). The argmax stays on the device: no per-token
    synchronisation until the tokens are read at the end."""

    def __init__(self, engine, capacity: int = 1024):
        self.engine, self.capacity = engine, capacity
        self.cache = StaticKVCache(engine.spec, 1, capacity, engine.dtype, engine.device)
        self.token = torch.zeros((1, 1), dtype=torch.long, device=engine.device)
        self.position = torch.zeros((1, 1), dtype=torch.long, device=engine.device)
        self.graph = None

    def _step(self) -> torch.Tensor:
        logits = self.engine.forward(self.token, self.cache, positions=self.position)  # (1, 1, V)
        return logits[0, -1].argmax().view(1, 1)

    def _capture(self) -> None:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):      # warm-up outside the graph (allocations, kernels)
            for _ in range(2):
                self._step()
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.next_token = self._step()

    def generate(self, prompt_ids: list[int], max_new_tokens: int) -> list[int]:
        n = len(prompt_ids)
        if n + max_new_tokens > self.capacity:
            raise ValueError(f"prompt + new tokens ({n + max_new_tokens}) exceed capacity {self.capacity}")
        ids = torch.tensor([prompt_ids], device=self.engine.device)
        pos = torch.arange(n, device=self.engine.device)[None]
        logits = self.engine.forward(ids, self.cache, positions=pos)
        self.token.copy_(logits[0, -1].argmax().view(1, 1))
        self.position.fill_(n)
        use_graph = self.engine.device.type == "cuda"
        if use_graph and self.graph is None:
            self._capture()    # the capture ran the step: rewrite the same slot on replay
        out = [self.token.clone()]
        for _ in range(max_new_tokens - 1):
            if use_graph:
                self.graph.replay()
                nxt = self.next_token
            else:
                nxt = self._step()
            self.token.copy_(nxt)
            self.position.add_(1)
            out.append(self.token.clone())
        return torch.cat(out).flatten().tolist()
