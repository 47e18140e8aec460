"""The one place in lib/ that holds the model and the shared results.

- `model()`  : the LoadedModel for this session. Whoever runs the server chooses the model,
               device and dtype (`LLM_LAB_MODEL`, `LLM_LAB_DEVICE`, `LLM_LAB_DTYPE`; README);
               a visitor may choose another one only while the server's memory budget
               (`LLM_LAB_MEMORY_MB`, default 2200, server + children) allows it, and never when
               `LLM_LAB_VISITOR_MODELS=0`; otherwise a clear message and the server's model.
               Besides the server's model at most one other model is held at a time.
- `cached(fn)`: `cached(fn)(*args)` = fn(*args), shared by every session, single-flight,
               bounded in bytes and persisted to the cache folder (lib.ui.memo). A
               LoadedModel/Engine argument is keyed by its key (source | device | dtype), tensors
               and arrays by their bytes, dataclasses by their fields; callbacks are ignored.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import threading

import numpy as np
import psutil
import streamlit as st
import torch

from lib.core import threads
from lib.core.engine import Engine
from lib.model import model_loader
from lib.model.model_loader import BUNDLED, LoadedModel, ModelLoadError
from lib.ui.i18n import texts
from lib.ui.memo import Memo, trim_memory

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


def _arg_key(x):
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
        return (type(x).__name__,) + tuple(_arg_key(i) for i in x)
    if isinstance(x, dict):
        return ("dict",) + tuple((k, _arg_key(v)) for k, v in sorted(x.items(), key=lambda kv: repr(kv[0])))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__qualname__,) + tuple((f.name, _arg_key(getattr(x, f.name))) for f in dataclasses.fields(x))
    return ("value", repr(x))


_wrapped: dict = {}


def _yield_hook():
    from lib.ui import prewarm

    prewarm.yield_to_visitors()


class Started:
    """Calls running in their own threads since `start(...)`; `.results()` waits for them."""

    def __init__(self, calls):
        from lib.ui import memo, prewarm

        used, background = getattr(memo._run, "used", None), getattr(prewarm._mine, "on", False)
        self.values, self.errors = [None] * len(calls), [None] * len(calls)

        def work(i):
            if used is not None:
                memo._run.used = used           # this script run's provenance list
            prewarm._mine.on = background       # the background visitor's work stays background
            try:
                with threads.background_thread() if background else contextlib.nullcontext():
                    self.values[i] = calls[i]()
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                self.errors[i] = e

        self.threads = [threading.Thread(target=work, args=(i,), name=f"started-{i}", daemon=True)
                        for i in range(len(calls))]
        for th in self.threads:
            th.start()

    def results(self) -> list:
        """Every call's result in order, once all have finished; the first error is raised."""
        for th in self.threads:
            th.join()
        for e in self.errors:
            if e is not None:
                raise e
        return self.values


def start(*calls) -> Started:
    """Start independent calls now, each in its own thread; collect them later with
    `.results()`. A page starts its model work before it draws its first figures, and its two
    generations from one prompt (`start(lambda: cached(f)(...), lambda: cached(f)(...))`) share
    every batched step of the engine (lib/decoding/batching.py) instead of taking turns: half the
    steps for the page, and for a class half the batched steps, each with twice the rows
    (30 new prompts in one process, side by side: 32 s one after the other, 21 s together)."""
    return Started(calls)


PERSIST_MIN_S = 1.0


def worth_persisting(prov) -> bool:
    """Which computed results go to the cache folder: all of the background visitor's (every
    page's default state, so a restarted server shows defaults at once), and a visitor's own
    only when it took >= PERSIST_MIN_S to compute. Writing a cheap result costs more than
    computing it again: thirty new prompts at once wrote ~300 small files (7% of the server's
    time under py-spy)."""
    from lib.ui import prewarm

    return bool(getattr(prewarm._mine, "on", False)) or prov.seconds >= PERSIST_MIN_S


def cached(fn, max_entries: int = 32):
    """`cached(fn)(*args)` = fn(*args), memoised for every session (see lib.ui.memo)."""
    if fn not in _wrapped:
        _wrapped[fn] = Memo(fn, _arg_key, max_entries, before_compute=_yield_hook, persist_if=worth_persisting)
    return _wrapped[fn]
