"""The one place in lib/ that touches Streamlit caching.

- `model()`  : the process-wide LoadedModel chosen in the sidebar (st.cache_resource, shared by
               every browser session; it holds weights only, never per-visitor state).
- `cached(fn)`: memoises a pure lib function on its arguments (st.cache_data); a LoadedModel
               argument is hashed by its key (source | device | dtype), so results are cached
               per (model, inputs, settings).
"""
from __future__ import annotations

import hashlib
import threading

import streamlit as st
import torch

from lib import model_loader
from lib.engine import Engine
from lib.model_loader import BUNDLED, LoadedModel, ModelLoadError

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


def _hash_model(m) -> str:
    return m.key


def _hash_tensor(t: torch.Tensor) -> str:
    data = t.detach().cpu().contiguous()
    return f"{tuple(data.shape)}|{data.dtype}|" + hashlib.sha1(data.view(torch.uint8).numpy()).hexdigest()


_wrapped: dict = {}


def cached(fn, max_entries: int = 64):
    """`cached(fn)(*args)` = fn(*args), memoised per process on the arguments' values."""
    if fn not in _wrapped:
        _wrapped[fn] = st.cache_data(fn, show_spinner=False, max_entries=max_entries,
                                     hash_funcs={LoadedModel: _hash_model, Engine: _hash_model,
                                                 torch.Tensor: _hash_tensor})
    return _wrapped[fn]
