"""Greedy decoding with each step one CUDA-graph replay (the gpt-fast approach), on the one
decode loop's own steps: `prefill` for the prompt, `decode_one_token` for every new token
(lib/decoding/generate.py).

On a GPU, one decode step of a 270M model is ~270 small kernels: launching them from Python
costs far more than the math. A CUDA graph records one `decode_one_token` once and replays it
with one launch. That needs every tensor to keep its shape and address: the cache is a
StaticKVCache (lib/core/cache/static.py, slot = position), the input token and its position
are tensors updated in place, and the argmax stays on the device (no per-token
synchronisation until the tokens are read at the end). On the CPU, where graphs do not exist,
the same step is called directly.
"""
from __future__ import annotations

import torch

from lib.core.cache.static import StaticKVCache
from lib.decoding.generate import decode_one_token, prefill


class GraphedGreedyDecoder:
    def __init__(self, engine, capacity: int = 1024):
        self.engine, self.capacity = engine, capacity
        self.cache = StaticKVCache(engine.spec, 1, capacity, engine.dtype, engine.device)
        self.token = torch.zeros((1, 1), dtype=torch.long, device=engine.device)      # (1, 1) input
        self.position = torch.zeros((1, 1), dtype=torch.long, device=engine.device)   # (1, 1) its slot
        self.graph = None

    def _step(self) -> torch.Tensor:
        """decode_one_token on the static inputs; the next token (1, 1), on the device."""
        return decode_one_token(self.engine, self.token, self.cache, self.position)[0].argmax().view(1, 1)

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
        """The greedy continuation (max_new_tokens ids) of prompt_ids, as `greedy` gives it."""
        n = len(prompt_ids)
        if n + max_new_tokens > self.capacity:
            raise ValueError(f"prompt + new tokens ({n + max_new_tokens}) exceed capacity {self.capacity}")
        ids = torch.tensor([prompt_ids], device=self.engine.device)                  # (1, n)
        logits, _ = prefill(self.engine, ids, self.cache,
                            positions=torch.arange(n, device=self.engine.device)[None])   # (1, V)
        self.token.copy_(logits[0].argmax().view(1, 1))
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
