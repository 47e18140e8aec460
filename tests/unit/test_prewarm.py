"""The background visitor yields to real visitors: its next computation waits while any real
visitor's script runs."""
import threading
import time

from lib.ui import prewarm


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
            assert (c.slug, "") in visits and (c.slug, "lang=id") in visits
