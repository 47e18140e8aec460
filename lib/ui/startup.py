"""What the server does once, before any page runs (called first thing by app.py).

1. Heavy imports, all of them, under one process-wide lock: pandas, pyarrow, plotly (with the
   validators of every trace and layout property the pages use), Streamlit's dataframe
   conversion, and every third-party module or name that lib/ and pages/ import anywhere
   (transformers' lazily resolved classes included). Thirty sessions that start together otherwise import
   them lazily in thirty script threads at once, and a thread that reaches a half-imported
   module crashes (`partially initialized module 'pandas' has no attribute 'Series'`, seen
   from plotly's validators). Every other session waits on the lock until the first is done.
2. The background pre-computation of every page's default state (lib.serving.prewarm), started once.

Streamlit runs no app code before the first visitor, so "start" is the first script run of the
process; a restarted server serves defaults from the persisted cache meanwhile.
"""
from __future__ import annotations

import os
import threading
import time

# Before anything loads PyTorch (its OpenMP library reads this once, when it is loaded): threads
# that finish their share of a parallel operation sleep instead of spinning. A server runs the
# engine's batched steps and thirty sessions' own tensor work at once on two cores; spinning
# threads took the cores from the ones with work (30 new prompts at once, one process, side by
# side: 59 s and 111 CPU-s spinning, 43 s and 82 CPU-s sleeping; bench/classroom.py runs the
# server). Whoever starts the server can still set it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _one_ast_parse_at_a_time() -> None:
    """CPython 3.11 keeps the AST converter's recursion depth per interpreter, not per thread
    (gh-106905): two threads in `ast.parse` at once can fail with "SystemError: AST
    constructor recursion depth mismatch". Streamlit parses each page script (its "magic"), and
    this app parses its own modules (lib.serving.result_store); a 30-session class crashed the
    beam-search page this way once in 30. From here on every `ast.parse` in the process takes
    one lock (a few milliseconds per page script, once)."""
    import ast
    import sys

    if sys.version_info >= (3, 13) or getattr(ast.parse, "one_at_a_time", False):
        return
    parse, lock = ast.parse, threading.Lock()

    def locked_parse(*args, **kwargs):
        with lock:
            return parse(*args, **kwargs)

    locked_parse.one_at_a_time = True
    ast.parse = locked_parse


_one_ast_parse_at_a_time()

_lock = threading.Lock()
_done = False
import_seconds: float | None = None


def _heavy_imports() -> None:
    import numpy  # noqa: F401
    import pandas as pd
    import pyarrow  # noqa: F401
    import plotly.graph_objects as go
    import plotly.io  # noqa: F401
    from plotly.subplots import make_subplots
    import streamlit.dataframe_util as du
    # First: transformers.processing_utils runs `direct_transformers_import`, which executes
    # transformers/__init__.py again and puts a NEW lazy `transformers` module into sys.modules,
    # whose names are all unresolved again. Every name resolved below must be resolved on that one.
    import transformers.processing_utils  # noqa: F401
    import transformers  # noqa: F401
    from transformers import AutoConfig, AutoTokenizer, PreTrainedTokenizerFast  # noqa: F401
    from transformers import GenerationConfig, GenerationMixin  # noqa: F401 (raced in the load test)
    import transformers.generation.utils  # noqa: F401

    # Plotly imports its property validators lazily on first use: build one figure with every
    # trace kind and layout feature the pages use, and serialise it.
    fig = make_subplots(rows=1, cols=2, subplot_titles=("a", "b"))
    fig.add_trace(go.Scatter(x=[1, 2], y=[1, 2], mode="lines+markers", text=["a", "b"],
                             hovertemplate="%{x}", line=dict(dash="dot")), row=1, col=1)
    fig.add_trace(go.Bar(x=["a", "b"], y=[1, 2], marker=dict(color=[1, 2]), orientation="v"), row=1, col=2)
    fig.add_trace(go.Heatmap(z=[[1, 2], [3, 4]], colorscale="Viridis", colorbar=dict(title="c")))
    fig.add_trace(go.Histogram(x=[1, 2, 2]))
    fig.add_trace(go.Scattergl(x=[1], y=[1]))
    fig.add_hline(y=1, annotation_text="h")
    fig.add_vline(x=1, annotation_text="v")
    fig.add_hrect(y0=0, y1=1, fillcolor="gray", opacity=0.1)
    fig.add_annotation(x=1, y=1, text="a", showarrow=True)
    fig.add_shape(type="line", x0=0, x1=1, y0=0, y1=1)
    fig.update_layout(title="t", xaxis_title="x", yaxis_title="y", barmode="group", separators=".,",
                      legend=dict(orientation="h"), margin=dict(l=1, r=1, t=1, b=1), font=dict(size=12),
                      hovermode="x unified", showlegend=True)
    fig.update_xaxes(type="log", tickformat=".2f")
    fig.update_yaxes(range=[0, 1], type="linear")
    fig.to_json()
    # st.dataframe's conversion (pandas -> arrow), without drawing anything.
    du.convert_anything_to_arrow_bytes(pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}))
    du.convert_anything_to_arrow_bytes({"a": [1.0, 2.0], "b": ["x", "y"]})


def imported_names() -> set[tuple[str, str | None]]:
    """Every (third-party module, name or None) that lib/ and pages/ import anywhere, including
    inside functions."""
    import ast
    from pathlib import Path

    from lib.serving.result_store import parse

    root = Path(__file__).resolve().parents[2]
    wanted: set[tuple[str, str | None]] = set()
    for path in list((root / "lib").rglob("*.py")) + list((root / "pages").glob("*.py")):
        try:
            tree = parse(path)
        except (OSError, SyntaxError, ValueError, SystemError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                wanted.update((a.name, None) for a in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                wanted.update((node.module, a.name) for a in node.names if a.name != "*")
    return {(m, n) for m, n in wanted
            if m.split(".")[0] not in ("lib", "pages", "tests", "bench", "streamlit", "__future__")}


def _lazy_imports() -> list[str]:
    """Import now every name of `imported_names()` (transformers resolves `from transformers
    import X` lazily, and two threads doing that at once fail: `cannot import name
    'Gemma3TextConfig'`). Returns what could not be imported (optional extras)."""
    import importlib

    missing = []
    for module, name in sorted(imported_names(), key=lambda x: (x[0], x[1] or "")):
        try:
            mod = importlib.import_module(module)
            if name is not None and not hasattr(mod, name):
                importlib.import_module(f"{module}.{name}")
            elif name is not None:
                getattr(mod, name)
        except Exception:  # noqa: BLE001 - optional extras (e.g. CUDA-only) are simply absent
            missing.append(f"{module}.{name}" if name else module)
    return missing


lazy_missing: list[str] = []


MMAP_THRESHOLD = int(os.environ.get("LLM_LAB_MMAP_THRESHOLD", 4 << 20))  # larger blocks: own mapping
TRIM_EVERY_S = float(os.environ.get("LLM_LAB_TRIM_EVERY_S", 0.5))
TRIM_THRESHOLD = 32 << 20    # bytes of free heap top kept for reuse (malloc_trim runs after big work)


def _tame_malloc(arenas: int = 2) -> None:
    """Two glibc habits that make a busy server's memory grow; the settings below are what
    MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=4194304 MALLOC_TRIM_THRESHOLD_=33554432 would do,
    which no host lets us set before Python starts:
    - every thread that allocates gets its own heap arena (up to 8 per core), and thirty session
      threads then hold thirty half-empty heaps: cap them;
    - a freed large block raises the size above which blocks are mapped on their own (up to
      32 MB), so the batched step's (B, 1, 262144) logits then come from a heap, where freed
      holes between live blocks are never returned: pin it at 4 MB (a fixed threshold also
      fixes the trim threshold, so set that too: 32 MB of free heap top kept for reuse).
      Not at 2 MB: a float64 or int64 vector over the vocabulary is 2 MB plus malloc's header,
      and mapping each one afresh page-faults all of it (the temperature page's checks took
      120-150 ms instead of ~70 ms).
    README ("A class on one server") has the 30-new-prompt figures with and without it."""
    from lib.serving.heap import LIBC

    if LIBC is not None:
        LIBC.mallopt(-8, arenas)             # M_ARENA_MAX
        LIBC.mallopt(-3, MMAP_THRESHOLD)     # M_MMAP_THRESHOLD (also stops its adjustment)
        LIBC.mallopt(-1, TRIM_THRESHOLD)     # M_TRIM_THRESHOLD


def _hand_back_memory_after_steps() -> None:
    """A class's batched steps hand every generation its own (V,) row of logits, 1 MB each,
    freed again once its token is chosen; sixty of them per step leave holes in the heap that
    glibc keeps. The scheduler thread gives free heap pages back between steps, at most every
    TRIM_EVERY_S (30 new prompts on the temperature page, fresh server, one run each:
    peak 2,271 MB without, 2,147 MB with, server CPU 30.7 vs 32.2 s; mapping each 1 MB row on
    its own instead gave 1,961 MB but 46.9 CPU-s)."""
    from lib.decoding import batching
    from lib.serving.heap import trim_memory

    if any(getattr(h, "trims_memory", False) for h in batching.AFTER_STEP):
        return

    def trim() -> None:
        trim_memory(unless_within_s=TRIM_EVERY_S)

    trim.trims_memory = True
    batching.AFTER_STEP.append(trim)


def once() -> None:
    """Run the start-of-server work exactly once; concurrent callers wait until it is done."""
    global _done, import_seconds
    if _done:
        return
    with _lock:
        if _done:
            return
        t0 = time.perf_counter()
        _tame_malloc()
        _hand_back_memory_after_steps()
        _heavy_imports()
        lazy_missing[:] = _lazy_imports()
        from lib.serving.result_store import precompute_versions

        precompute_versions()
        import_seconds = time.perf_counter() - t0
        from lib.serving import prewarm, streamlit_adapter

        prewarm.start(streamlit_adapter.server_base_url(), streamlit_adapter.server_port())
        _done = True
