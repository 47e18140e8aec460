"""`cached(fn)`: results shared by every session of this server.

`cached(fn)(*args)` = fn(*args), through one `memo.Memo` per function: single-flight, bounded in
bytes, persisted to the cache folder (lib.serving.memo, lib.serving.result_store). Arguments
are keyed by `arg_key`: a LoadedModel/Engine by its key (source | device | dtype), tensors and
arrays by their bytes, dataclasses by their fields; callables (progress callbacks) are ignored.
Before computing, the background visitor yields to real visitors (lib.serving.prewarm).
"""
from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import torch

from lib.core.engine import Engine
from lib.model.model_loader import LoadedModel
from lib.serving import prewarm
from lib.serving.memo import Memo

PERSIST_MIN_S = 1.0


def arg_key(x):
    """A hashable stand-in for one argument: models by identity of their weights, tensors and
    arrays by their bytes, dataclasses by their fields, callables (progress callbacks) not at
    all, the rest by value."""
    if isinstance(x, (LoadedModel, Engine)):
        return ("model", x.key)
    if isinstance(x, torch.Tensor):
        data = x.detach().cpu().contiguous()
        return ("tensor", tuple(data.shape), str(data.dtype), hashlib.sha1(data.view(torch.uint8).numpy()).hexdigest())
    if isinstance(x, np.ndarray):
        return ("array", x.shape, str(x.dtype), hashlib.sha1(np.ascontiguousarray(x).tobytes()).hexdigest())
    if callable(x) and not isinstance(x, type):
        return ("callable",)
    if isinstance(x, (list, tuple)):
        return (type(x).__name__,) + tuple(arg_key(i) for i in x)
    if isinstance(x, dict):
        return ("dict",) + tuple((k, arg_key(v)) for k, v in sorted(x.items(), key=lambda kv: repr(kv[0])))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__qualname__,) + tuple((f.name, arg_key(getattr(x, f.name))) for f in dataclasses.fields(x))
    return ("value", repr(x))


def worth_persisting(prov) -> bool:
    """Which computed results go to the cache folder: all of the background visitor's (every
    page's default state, so a restarted server shows defaults at once), and a visitor's own
    only when it took >= PERSIST_MIN_S to compute. Writing a cheap result costs more than
    computing it again: thirty new prompts at once wrote ~300 small files (7% of the server's
    time under py-spy)."""
    return prewarm.in_background() or prov.seconds >= PERSIST_MIN_S


_wrapped: dict = {}


def cached(fn, max_entries: int = 32):
    """`cached(fn)(*args)` = fn(*args), memoised for every session (see the module docstring)."""
    if fn not in _wrapped:
        _wrapped[fn] = Memo(fn, arg_key, max_entries, before_compute=prewarm.yield_to_visitors,
                            persist_if=worth_persisting)
    return _wrapped[fn]
