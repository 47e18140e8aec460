"""The one place in lib/ that touches Streamlit caching.

- `model()`  : the process-wide LoadedModel chosen in the sidebar (st.cache_resource, shared by
               every browser session; it holds weights only, never per-visitor state).
- `cached(fn)`: memoises a pure lib function on its arguments (a small process-wide LRU);
               a LoadedModel/Engine argument is keyed by its key (source | device | dtype), so
               results are cached per (model, inputs, settings); progress callbacks are ignored.
"""
from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict

import numpy as np
import streamlit as st
import torch

from lib.model import model_loader
from lib.core.engine import Engine
from lib.model.model_loader import BUNDLED, LoadedModel, ModelLoadError

torch.set_num_threads(max(1, min(torch.get_num_threads(), 4)))
_load_lock = threading.Lock()  # two visitors asking for a new model load it once


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@st.cache_resource(show_spinner=False, max_entries=2)
def _load(source: str, device: str, dtype: str = "float32") -> LoadedModel:
    with _load_lock:
        bar = st.progress(0.0, text="Preparing the model…")

        def progress(frac, msg):
            bar.progress(min(max(frac, 0.0), 1.0), text=f"Preparing the bundled model (first run only): {msg}")

        try:
            return model_loader.load(source, device, DTYPES[dtype], progress=progress)
        finally:
            bar.empty()


def choice() -> tuple[str, str, str]:
    """(source, device, dtype) this session asked for (set by the sidebar)."""
    return (st.session_state.get("model_source", BUNDLED),
            st.session_state.get("device", model_loader.default_device()),
            st.session_state.get("dtype", "float32"))


def model() -> LoadedModel:
    """The model for this session. A failed load shows the reason and keeps the model the
    session had before (the bundled one at first)."""
    wanted = choice()
    try:
        m = _load(*wanted)
        st.session_state["model_good"] = wanted
        return m
    except ModelLoadError as e:
        st.error(str(e))
        good = st.session_state.get("model_good", (BUNDLED, "cpu", "float32"))
        st.session_state["model_source"] = good[0]
        return _load(*good)


def _arg_key(x):
    """A hashable stand-in for one argument: models by identity of their weights, tensors and
    arrays by their bytes, callables (progress callbacks) not at all, the rest by value."""
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
        return (type(x).__name__,) + tuple(_arg_key(i) for i in x)
    if isinstance(x, dict):
        return ("dict",) + tuple((k, _arg_key(v)) for k, v in sorted(x.items(), key=lambda kv: repr(kv[0])))
    return ("value", repr(x))


class _Memo:
    """Process-wide LRU memo of one function. Unlike st.cache_data it records no Streamlit
    elements, so a function may report progress through a callback; results are shared
    between sessions and must be treated as read-only."""

    def __init__(self, fn, max_entries: int):
        self.fn, self.max_entries = fn, max_entries
        self.store: OrderedDict = OrderedDict()
        self.lock = threading.Lock()
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        key = (tuple(_arg_key(a) for a in args), tuple((k, _arg_key(v)) for k, v in sorted(kwargs.items())))
        with self.lock:
            if key in self.store:
                self.store.move_to_end(key)
                return self.store[key]
        value = self.fn(*args, **kwargs)
        with self.lock:
            self.store[key] = value
            while len(self.store) > self.max_entries:
                self.store.popitem(last=False)
        return value


_wrapped: dict = {}


def cached(fn, max_entries: int = 32):
    """`cached(fn)(*args)` = fn(*args), memoised per process on the arguments' values
    (a LoadedModel/Engine by its key; callbacks such as progress reporters are ignored)."""
    if fn not in _wrapped:
        _wrapped[fn] = _Memo(fn, max_entries)
    return _wrapped[fn]
