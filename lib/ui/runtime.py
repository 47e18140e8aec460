"""The one place in lib/ that holds the model and the shared results.

- `model()`  : the LoadedModel for this session. Whoever runs the server chooses the model,
               device and dtype (`LLM_LAB_MODEL`, `LLM_LAB_DEVICE`, `LLM_LAB_DTYPE`; README);
               a visitor may choose another one only while the server's memory budget
               (`LLM_LAB_MEMORY_MB`, default 2200, server + children) allows it, and never when
               `LLM_LAB_VISITOR_MODELS=0`; otherwise a clear message and the server's model.
               Besides the server's model at most one other model is held at a time.
- `cached(fn)`: `cached(fn)(*args)` = fn(*args), shared by every session, single-flight,
               bounded in bytes and persisted to the cache folder (lib.serving.results).
- `start(*calls)`: independent calls in threads of their own, collected later (lib.serving.jobs).
"""
from __future__ import annotations

import os
import threading

import psutil
import streamlit as st
import torch

from lib.core import threads
from lib.model import model_loader
from lib.model.model_loader import BUNDLED, LoadedModel, ModelLoadError
from lib.ui.i18n import texts
from lib.serving import jobs, results
from lib.serving.heap import trim_memory

threads.model_work_on_all_cores(max(1, min(threads.DEFAULT, 4)))   # lib/core/threads.py

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
SERVER_SOURCE = os.environ.get("LLM_LAB_MODEL", "").strip() or BUNDLED
SERVER_DTYPE = os.environ.get("LLM_LAB_DTYPE", "float32") if os.environ.get("LLM_LAB_DTYPE") in DTYPES else "float32"
MEMORY_BUDGET_MB = float(os.environ.get("LLM_LAB_MEMORY_MB", "2200"))
VISITOR_MODELS = os.environ.get("LLM_LAB_VISITOR_MODELS", "1") != "0"

_load_lock = threading.Lock()      # models load one at a time; two visitors asking for one load it once
_models: dict[tuple, LoadedModel] = {}


def server_choice() -> tuple[str, str, str]:
    return SERVER_SOURCE, model_loader.default_device(), SERVER_DTYPE


def rss_mb() -> float:
    """Resident memory of this server and its child processes, MB."""
    me = psutil.Process()
    total = me.memory_info().rss
    for child in me.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


def estimate_mb(source: str, dtype: str) -> float:
    """What loading `source` in `dtype` adds to the server's memory, MB (weights only)."""
    per = torch.empty((), dtype=DTYPES[dtype]).element_size()
    if source == BUNDLED:
        from lib.core import engine_weights
        from lib.model import bundled_model

        f = bundled_model.bundled_folder() / engine_weights.FILE
        if not f.exists():
            return 1.1e9 * per / 4 / 2**20
        if dtype == "float32":                # memory-mapped as stored (the vocabulary as Q8_0)
            return f.stat().st_size / 2**20
        return engine_weights.parameter_count(f) * per / 2**20
    folder = source if model_loader._exists(source) else None
    if folder is None:
        return 1500.0                     # unknown until downloaded: assume a small model
    from pathlib import Path

    stored = sum(p.stat().st_size for p in Path(folder).glob("*") if p.suffix in (".safetensors", ".bin"))
    return stored / 2 * per / 2**20       # checkpoints are mostly stored in 16-bit


def _load(source: str, device: str, dtype: str) -> LoadedModel:
    key = (source, device, dtype)
    if key in _models:
        return _models[key]
    with _load_lock:
        if key in _models:
            return _models[key]
        c = texts("server")
        if key != server_choice():
            if not VISITOR_MODELS:
                raise ModelLoadError(c("model_fixed", model=SERVER_SOURCE, dtype=SERVER_DTYPE))
            for other in [k for k in _models if k != server_choice()]:
                del _models[other]        # at most one visitor model at a time (sessions keep theirs until rerun)
            need, used = estimate_mb(source, dtype), rss_mb()
            if used + need > MEMORY_BUDGET_MB:
                raise ModelLoadError(c("model_over_budget", need=need, used=used, budget=MEMORY_BUDGET_MB,
                                       model=SERVER_SOURCE, dtype=SERVER_DTYPE))
        bar = st.progress(0.0, text="Preparing the model…")

        def progress(frac, msg):
            bar.progress(min(max(frac, 0.0), 1.0), text=f"Preparing the bundled model (first run only): {msg}")

        try:
            m = model_loader.load(source, device, DTYPES[dtype], progress=progress)
        finally:
            bar.empty()
        trim_memory()                     # the tokenizer's JSON parse leaves ~150 MB of freed heap behind
        _models[key] = m
        return m


def choice() -> tuple[str, str, str]:
    """(source, device, dtype) this session asked for (set by the sidebar; the server's by default)."""
    src, dev, dt = server_choice()
    return (st.session_state.get("model_source", src), st.session_state.get("device", dev),
            st.session_state.get("dtype", dt))


def model() -> LoadedModel:
    """The model for this session. A failed or refused load shows the reason and keeps the
    model the session had before (the server's at first)."""
    wanted = choice()
    try:
        m = _load(*wanted)
        st.session_state["model_good"] = wanted
        return m
    except ModelLoadError as e:
        st.error(str(e))
        good = st.session_state.get("model_good", server_choice())
        st.session_state["model_source"] = good[0]
        if good[2] != wanted[2]:
            st.session_state["dtype_reset"] = good[2]     # the sidebar puts its dtype back next run
        return _load(*good)


def model_name(m: LoadedModel) -> str:
    """The model's display name in the visitor's language (the bundled one's is translated)."""
    return texts("common")("bundled_model_name") if m.source == BUNDLED else m.name


# The shared results and jobs are the serving layer's (lib/serving); pages reach them here.
cached = results.cached
start = jobs.start
