"""The background visitor yields to real visitors: its next computation waits while any real
visitor's script runs."""
import threading
import time

from lib.serving import prewarm


def test_background_work_waits_while_a_visitor_runs():
    events = []

    def background():
        prewarm._mine.on = True
        try:
            prewarm.yield_to_visitors()
            events.append(("background computes", time.monotonic()))
        finally:
            prewarm._mine.on = False

    with prewarm.visitor_running():              # outside a session: a real visitor
        assert prewarm.visitors_active() == 1
        t = threading.Thread(target=background)
        t.start()
        time.sleep(0.6)
        assert events == []                      # still waiting
        ended = time.monotonic()
    t.join(timeout=5)
    assert events and events[0][1] >= ended
    assert prewarm.visitors_active() == 0


def test_a_visitor_never_waits():
    t0 = time.monotonic()
    with prewarm.visitor_running():
        prewarm.yield_to_visitors(idle_s=5.0)     # not the background thread: returns at once
    assert time.monotonic() - t0 < 0.5


def test_every_concept_page_is_prewarmed_in_both_languages():
    from lib.concepts.catalog import CONCEPTS

    visits = prewarm.default_visits()
    for c in CONCEPTS:
        if c.exists:
            assert (c.slug, "reveal=1") in visits and (c.slug, "lang=id&reveal=1") in visits   # answered


def test_model_memorys_whole_probe_grid_is_measured_in_the_background():
    """Every batch x prompt length the page offers is a prewarmed state (its default among the
    default visits, the rest after them), so a class moving these controls starts no probe."""
    from itertools import product
    from urllib.parse import parse_qsl

    from lib.concepts.model_memory import probes

    visits = prewarm.default_visits()
    grid = {(int(q["batch"]), int(q["prefill"])) for q in
            (dict(parse_qsl(query)) for page, query in visits if page == "model-memory" and "batch" in query)}
    assert ("model-memory", "reveal=1") in visits and probes.PREFILL_DEFAULT not in grid
    assert grid | {probes.PREFILL_DEFAULT} == set(product(probes.PREFILL_BATCHES, probes.PREFILL_TOKENS))
    defaults = [i for i, (_, q) in enumerate(visits) if q in ("reveal=1", "lang=id&reveal=1")]
    assert max(defaults) < min(i for i, (_, q) in enumerate(visits) if "batch" in q)   # defaults first


def test_a_visitor_needing_what_the_background_is_about_to_compute_is_not_blocked():
    """The deadlock seen in CI: the background visitor took a key's flight, then waited for
    visitors to finish; a visitor needing the same key waited for that flight forever."""
    from lib.serving.memo import Memo

    calls = []
    memo = Memo(lambda x: calls.append(threading.current_thread().name) or x * 2,
                key_of=lambda a: a, before_compute=prewarm.yield_to_visitors)
    memo.name = f"deadlock-test-{time.monotonic_ns()}"     # a fresh key space, no disk hit
    from lib.serving import memo as memo_module
    was, memo_module.STORE.enabled = memo_module.STORE.enabled, False
    out = {}

    def background():
        prewarm._mine.on = True
        try:
            out["background"] = memo(21)
        finally:
            prewarm._mine.on = False

    def visitor():
        with prewarm.visitor_running():
            time.sleep(0.3)                      # the background thread is already waiting
            out["visitor"] = memo(21)

    v = threading.Thread(target=visitor, name="visitor")
    b = threading.Thread(target=background, name="background")
    v.start()
    time.sleep(0.1)
    b.start()
    v.join(timeout=10)
    b.join(timeout=10)
    memo_module.STORE.enabled = was
    assert out == {"visitor": 42, "background": 42}
    assert calls == ["visitor"]                   # computed once, by the visitor


def test_the_background_visitor_never_measures():
    """At nice 19 anything else on the machine stretches a timing: the background visitor's
    measurement raises (its page visit ends there); a visitor's measurement runs."""
    import pytest

    from lib.core import timing

    out = {}

    def background():
        prewarm._mine.on = True
        try:
            timing.measure(lambda: None, repeats=1)
            out["background"] = "measured"
        except prewarm.LeftToVisitors:
            out["background"] = "left to visitors"
        finally:
            prewarm._mine.on = False

    t = threading.Thread(target=background)
    t.start()
    t.join(timeout=10)
    assert out == {"background": "left to visitors"}
    assert timing.measure(lambda: None, repeats=1).repeats == 1          # a visitor's thread measures
    assert issubclass(prewarm.LeftToVisitors, BaseException) and not issubclass(prewarm.LeftToVisitors, Exception)
    prewarm._mine.on = True                                                # exclusive() itself, too
    try:
        with pytest.raises(prewarm.LeftToVisitors):
            with timing.exclusive():
                pass
    finally:
        prewarm._mine.on = False
