"""Every page's default state, computed in the background once the server runs.

A daemon thread acts as one visitor: it opens each page's default URL (English, then
Indonesian, whose default prompt differs; then the few other states a concept names in
`Concept.background`, model-memory's probe grid) through Streamlit's own websocket protocol against
127.0.0.1 (lib.serving.page_visit), one page at a time, so each page's `runtime.cached` results are
computed (or loaded from the cache folder) and kept, exactly as a student's visit would.
It has the lowest priority and yields to visitors:
- it opens the next page only after no real visitor's script has run for `IDLE_S`;
- inside a page, each new computation waits until no real visitor's script runs
  (`yield_to_visitors`, called by the memo before it computes);
- its script thread runs at the lowest CPU priority (nice 19), its tensor work, the model's too,
  on one core (lib.core.threads.background_thread: no OpenMP team beside the scheduler's);
- it never times anything (lib.core.timing.guard_measurements): at nice 19, anything else on the
  machine stretches its timings; when a page reaches a measurement, the background visit of
  that page ends there and the first real visitor measures, at normal priority.
Real visitors are told apart by a header their browsers never send (visitor.PREWARM_HEADER).
`LLM_LAB_PREWARM=0` switches it off (tests do, to measure cold pages).
"""
from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

from lib.core import threads, timing

IDLE_S = 1.0
REVEAL = "reveal=1"           # the default states as answered: the figures the answers show are computed too
_cond = threading.Condition()
_active = 0                  # real visitors' script runs in progress
_last_active = 0.0           # when the last one ended
_mine = threading.local()    # is this script thread the background visitor's?
_started = False
status: dict = {"state": "not started", "done": 0, "total": 0, "failed": [], "seconds": 0.0}


def enabled() -> bool:
    return os.environ.get("LLM_LAB_PREWARM", "1") != "0"


class LeftToVisitors(BaseException):
    """Raised in the background visitor's script when it reaches a measurement. A
    BaseException, like Streamlit's own stop: a visitor waiting on the same memo key computes
    it itself (lib.serving.memo), and `visitor_running` ends the background script quietly."""


def _no_measuring_in_background() -> None:
    if getattr(_mine, "on", False):
        raise LeftToVisitors()


timing.guard_measurements(_no_measuring_in_background)


@contextmanager
def visitor_running(background: bool = False):
    """Wrap a script run (app.py): a real visitor's run makes the background work wait; the
    background visitor's own run (`background`: streamlit_adapter.is_background_session())
    is marked (and niced) instead."""
    global _active, _last_active
    if background:
        _mine.on = True
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (OSError, AttributeError):
            pass
        try:
            with threads.background_thread():        # one core, no OpenMP team of its own
                yield
        except LeftToVisitors:
            status["left_to_visitors"] = status.get("left_to_visitors", 0) + 1
        finally:
            _mine.on = False
        return
    with _cond:
        _active += 1
    try:
        yield
    finally:
        with _cond:
            _active -= 1
            _last_active = time.monotonic()
            _cond.notify_all()


def in_background() -> bool:
    """Is this thread doing the background visitor's work?"""
    return bool(getattr(_mine, "on", False))


def mark_background(on: bool) -> None:
    """Mark this thread's work as the background visitor's (a thread it started) or not."""
    _mine.on = on


def visitors_active() -> int:
    return _active


def yield_to_visitors(idle_s: float = 0.0) -> None:
    """In the background visitor's thread: wait until no real visitor's script runs (and none
    ran for `idle_s`). Anywhere else: return at once."""
    if not getattr(_mine, "on", False):
        return
    with _cond:
        while _active > 0 or time.monotonic() - _last_active < idle_s:
            _cond.wait(timeout=0.25)


def default_visits() -> list[tuple[str, str]]:
    """(page, query) of every concept (and teaching) page's default state, English first, then
    the states a concept asks to have computed in the background too (`Concept.background`).
    Each with its questions answered (reveal=1): what the answers show is computed too."""
    from lib.concepts.catalog import CONCEPTS, PAGES_DIR

    pages = [c.slug for c in CONCEPTS if c.exists]
    # teaching pages (lessons, life of a token, glossary...): every other page file but home
    pages += sorted(p.stem for p in PAGES_DIR.glob("*.py") if p.stem not in pages and p.stem != "home")
    extra = [(c.slug, f"{q}&{REVEAL}") for c in CONCEPTS if c.exists for q in c.background]
    return [(p, REVEAL) for p in pages] + [(p, f"lang=id&{REVEAL}") for p in pages] + extra


def serving_here(port: int, wait_s: float = 30.0) -> bool:
    """Is this process the one listening on `port`, within `wait_s` seconds? (Not under
    AppTest, which runs app.py without a server: the port may then belong to somebody else's.)"""
    import psutil

    end = time.monotonic() + wait_s
    while True:
        try:
            if any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
                   for c in psutil.Process().net_connections(kind="tcp")):
                return True
        except psutil.Error:
            return False
        if time.monotonic() >= end:
            return False
        time.sleep(1.0)


def _run(base_url: str, port: int) -> None:
    from lib.serving.page_visit import PREWARM_HEADER, visit

    if not serving_here(port):
        status.update(state="no server in this process")
        return
    visits = default_visits()
    status.update(state="running", total=len(visits))
    t0 = time.perf_counter()
    time.sleep(IDLE_S)
    for page, query in visits:
        with _mine_off():
            yield_to_idle()
        v = visit(base_url, page, query, timeout_s=1800, headers={PREWARM_HEADER: "1"})
        status["done"] += 1
        if v.crashed:
            status["failed"].append(f"{page}?{query}: {v.failure or v.exceptions[:1] or 'not finished'}")
    status.update(state="done", seconds=time.perf_counter() - t0)
    print(f"[prewarm] done: {status['done']} states in {status['seconds']:.0f} s, "
          f"{len(status['failed'])} failed", flush=True)      # the benchmark waits for this line


@contextmanager
def _mine_off():
    _mine.on = True           # the waiting below is the background visitor's
    try:
        yield
    finally:
        _mine.on = False


def yield_to_idle() -> None:
    yield_to_visitors(IDLE_S)


def start(base_url: str, port: int) -> bool:
    """Start the background visitor once per process (if enabled) against this server, at
    `base_url` listening on `port`. True if it started now."""
    global _started
    if _started or not enabled():
        return False
    _started = True
    threading.Thread(target=_run, args=(base_url, port), name="llm-lab-prewarm", daemon=True).start()
    return True
