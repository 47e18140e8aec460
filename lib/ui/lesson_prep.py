"""Prepare a lesson before class: every step's page computed in its preset state, and its answer.

`prepare(lesson, lang, on_step)` opens each step's page on THIS server, in the step's URL state
and language, as one visitor would (lib/serving/page_visit.py: Streamlit's own websocket protocol, the
page script runs to its end), so every `runtime.cached` result the page needs is computed by the
page's own calls and kept for every session (lib/serving/memo.py); then it computes the step's answer
through the same cached function the answer key uses. Opening the step afterwards, from any
phone, is served from memory. Each step's seconds are returned (what it costs cold), and the
lesson is remembered as prepared for this process (`prepared_at`).

Outside a server (AppTest, a bare script) there is no page to open: only the answers are
computed, and the result says why the pages were not (`Prepared.failed`).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from lib.concepts.lessons import answers
from lib.concepts.lessons.catalog import Lesson, Step
from lib.serving import prewarm, streamlit_adapter
from lib.ui import lessons, runtime

STEP_TIMEOUT_S = 900.0          # one page's cold run (attention-sinks took 183 s in CI)
_prepared: dict[tuple[str, str], float] = {}      # (lesson, lang) -> when (epoch s)
_lock = threading.Lock()


@dataclass
class Prepared:
    seconds: float                                     # the whole preparation
    step_seconds: list[float] = field(default_factory=list)    # per step: page + answer
    failed: list[tuple[int, str]] = field(default_factory=list)  # (step n, why) pages not opened


def local_base() -> str | None:
    """http://127.0.0.1:PORT[/base] of this server, or None when this process serves nothing."""
    if not prewarm.serving_here(streamlit_adapter.server_port(), wait_s=0):
        return None
    return streamlit_adapter.server_base_url()


def open_page(base: str, step: Step, lang: str) -> str | None:
    """Run the step's page once on the server at `base`; None if it finished, else why not."""
    from lib.serving.page_visit import visit

    v = visit(base, step.slug, lessons.step_query(step, lang), timeout_s=STEP_TIMEOUT_S)
    if not v.crashed:
        return None
    return v.failure or (v.exceptions[0] if v.exceptions else "not finished")


def prepare(lesson: Lesson, lang: str, on_step: Callable[[int, Step], None] | None = None,
            no_server: str = "no server") -> Prepared:
    """Compute every step of `lesson` in `lang` in advance (see the module docstring).
    `on_step(i, step)` is called before step i (0-based); `no_server` is the reason recorded
    for every step when this process serves no pages."""
    t0 = time.perf_counter()
    base = local_base()
    m = runtime.model()
    out = Prepared(0.0)
    for i, step in enumerate(lesson.steps):
        if on_step:
            on_step(i, step)
        s0 = time.perf_counter()
        why = open_page(base, step, lang) if base else no_server
        if why:
            out.failed.append((i + 1, why))
        runtime.cached(answers.answer)(m, step.answer, lessons.answer_params(step, lang))
        out.step_seconds.append(time.perf_counter() - s0)
    out.seconds = time.perf_counter() - t0
    if not out.failed:
        with _lock:
            _prepared[(lesson.id, lang)] = time.time()
    return out


def prepared_at(lesson: Lesson, lang: str) -> float | None:
    """When this process last prepared `lesson` in `lang` completely (None: never)."""
    return _prepared.get((lesson.id, lang))
