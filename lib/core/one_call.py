"""Tensor functions run as one call: why a server compiles the model's hot paths.

PyTorch gives the GIL up for every tensor operation it runs from Python and takes it back after.
A layer of the model is ~100 small operations, the quantized LM head ~1,500, and in a server
where thirty sessions' page scripts run Python, each take-back waits for another thread's switch
interval (5 ms): one forward of a 20-token prompt with its next-token logits took 86 ms alone and
28.8 s beside one thread running pure Python on this 2-core host. A function compiled by
TorchScript runs all its operations in one call, with the GIL given up once: with each layer two
such calls and the LM head one, the same forward took 80 ms alone and 3.8 s beside that thread
(`python -m bench --only gil_contention`, medians, 2026-12-07). The results are bit for bit the
eager function's (the same operations in the same order; tests/unit/test_one_call.py).

The engine uses them on the CPU only: on a GPU an operation is a kernel launch, and TorchScript's
executor may fuse kernels there (other rounding) and would run inside the CUDA graph the graphed
decoder captures (lib/decoding/graphed_greedy.py); no session has had a GPU to try it.

TorchScript is deprecated in torch 2.13 (a DeprecationWarning, silenced here; the project pins
that version). Where a function cannot be compiled (another torch), `compiled` returns None and
the caller runs the eager function; `LLM_LAB_ONE_CALL=0` asks for that too (to compare the two).
"""
from __future__ import annotations

import logging
import os
import threading
import warnings
from contextlib import contextmanager
from typing import Callable

import torch

log = logging.getLogger(__name__)

ENV = "LLM_LAB_ONE_CALL"

_compiled: dict[Callable, Callable | None] = {}
_eager_only = False
_lock = threading.Lock()


def enabled() -> bool:
    """Does this process compile hot paths (LLM_LAB_ONE_CALL is not "0")?"""
    return os.environ.get(ENV, "1") != "0"


def compiled(fn: Callable) -> Callable | None:
    """fn compiled by TorchScript (once per process, then the same object), or None where it
    cannot be compiled, `enabled()` is false or inside `eager_only()`."""
    if _eager_only:
        return None
    if fn not in _compiled:
        with _lock:
            if fn not in _compiled:
                _compiled[fn] = _compile(fn) if enabled() else None
    return _compiled[fn]


@contextmanager
def eager_only():
    """Inside the block `compiled` returns None, in every thread: callers run their eager
    functions (to measure or test one against the other; not for a serving process)."""
    global _eager_only
    _eager_only = True
    try:
        yield
    finally:
        _eager_only = False


def _compile(fn: Callable) -> Callable | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return torch.jit.script(fn)
    except Exception as e:  # noqa: BLE001 - any failure to compile: the caller runs fn eagerly
        log.warning("%s could not be compiled (%s: %s); it runs eagerly", fn.__name__, type(e).__name__, e)
        return None
