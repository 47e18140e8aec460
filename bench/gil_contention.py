"""`python -m bench --only gil_contention`: the model's forward beside a busy Python thread.

Why a class's first figures waited (issue 29): in one server process the sessions' Python (their
page scripts) and the model's forwards share one GIL. A forward is thousands of small tensor
operations, and PyTorch gives the GIL up for each and takes it back after; while another
thread runs Python, every take-back waits for that thread's switch interval (5 ms). So an eager
forward's time grows with its number of operations, not its arithmetic. The engine therefore
runs each hook-free layer as two compiled calls, and the quantized LM head as one
(lib/core/one_call.py), each giving the GIL up once.

Measured, each the median of a few runs (bench.common.median_time), one thread of tensor work:
one forward of the model (a 20-token prompt, the next token's logits), as the engine runs it
(compiled layers and head) and eagerly (`one_call.eager_only()`), alone and beside one thread
running pure Python; and the aten operations that forward dispatches.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from bench.common import median_time
from lib.core import one_call, threads
from lib.model.tokens import encode_prompt

PROMPT = "My grandmother grew tomatoes, beans and chillies in a small garden behind the house, and every"


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

    def eager_forward():
        with one_call.eager_only():
            forward()

    out = {}
    with threads.cores(1):
        forward(), eager_forward()                          # warm-up (and the compilation)
        counter = _CountOps()
        with counter:
            forward()
        out["gil_forward_aten_ops"] = counter.n
        out["gil_forward_tokens"] = int(ids.shape[1])
        out["gil_forward_compiled_alone_ms"] = ms(forward, 5)
        out["gil_forward_eager_alone_ms"] = ms(eager_forward, 5)
        with busy_python_thread():
            out["gil_forward_compiled_beside_busy_ms"] = ms(forward, 3)
            out["gil_forward_eager_beside_busy_ms"] = ms(eager_forward, 3)
    out["gil_switch_interval_ms"] = 1000 * sys.getswitchinterval()
    return out
