"""`python -m bench --only gil_contention`: the model's forward beside a busy Python thread.

Why a class's first figures wait (issue 29): in one server process the sessions' Python (their
page scripts) and the model's forwards share one GIL. A forward is thousands of small tensor
operations, and PyTorch gives the GIL up for each and takes it back after; while another
thread runs Python, every take-back waits for that thread's switch interval (5 ms). So the
forward's time grows with its number of operations, not its arithmetic. A TorchScript function
runs all its operations in one call, with the GIL given up once.

Measured, each the median of a few runs (bench.common.median_time), one thread of tensor work:
- one forward of the model (a 20-token prompt): alone, and beside one thread running pure Python;
- the aten operations that forward dispatches;
- a chain of 600 small operations (200 x (x @ w, tanh, scale, add) on a (20, 64) tensor), eager and
  as `torch.jit.script`, alone and beside the busy thread.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from bench.common import median_time
from lib.core import threads
from lib.model.tokens import encode_prompt

PROMPT = "My grandmother grew tomatoes, beans and chillies in a small garden behind the house, and every"


def chain(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """600 small tensor operations, one after another."""
    for _ in range(200):
        x = torch.tanh(x @ w) + x * 0.5
    return x


@contextmanager
def busy_python_thread():
    """A thread that runs pure Python (as a session's page script does) for the block."""
    stop = [False]

    def spin():
        y = 0
        while not stop[0]:
            for i in range(1000):
                y += i * i

    t = threading.Thread(target=spin, daemon=True)
    t.start()
    time.sleep(0.2)
    try:
        yield
    finally:
        stop[0] = True
        t.join()


def ms(fn, repeat: int) -> float:
    """Median milliseconds of fn() over `repeat` runs (warmed up before)."""
    return round(1000 * median_time(fn, repeat=repeat, warmup=0), 1)


class _CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += 1
        return func(*args, **(kwargs or {}))


def measure(model) -> dict:
    eng = model.engine
    ids = torch.tensor([encode_prompt(model.tokenizer, PROMPT).ids])

    def forward():
        eng.forward(ids, eng.new_cache(1, ids.shape[1]), logits="last")

    x, w = torch.randn(20, 64), torch.randn(64, 64) / 8
    scripted = torch.jit.script(chain)
    out = {}
    with threads.cores(1):
        for f in (forward, lambda: chain(x, w), lambda: scripted(x, w)):
            f()                                             # warm-up
        counter = _CountOps()
        with counter:
            forward()
        out["gil_forward_aten_ops"] = counter.n
        out["gil_forward_tokens"] = int(ids.shape[1])
        out["gil_forward_alone_ms"] = ms(forward, 5)
        out["gil_chain_eager_alone_ms"] = ms(lambda: chain(x, w), 5)
        out["gil_chain_scripted_alone_ms"] = ms(lambda: scripted(x, w), 5)
        with busy_python_thread():
            out["gil_forward_beside_busy_ms"] = ms(forward, 1)
            out["gil_chain_eager_beside_busy_ms"] = ms(lambda: chain(x, w), 1)
            out["gil_chain_scripted_beside_busy_ms"] = ms(lambda: scripted(x, w), 3)
    out["gil_switch_interval_ms"] = 1000 * sys.getswitchinterval()
    return out
