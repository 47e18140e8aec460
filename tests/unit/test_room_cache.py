"""lib.classroom.room_cache (the pollers' shared room view): one load per key per max_age_s
however many poll, forgotten writes seen at once, a view loaded across a write never kept. The
store's use of it, on SQLite and PostgreSQL: tests/unit/test_classroom.py."""
from __future__ import annotations

import threading

from lib.classroom.room_cache import RoomCache


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_a_view_is_kept_for_max_age_then_loaded_again():
    clock, calls = Clock(), []
    cache = RoomCache(lambda k: calls.append(k) or f"{k}@{clock.t}", clock=clock)
    assert cache.get("A", 0.25) == "A@1000.0"
    clock.t += 0.25
    assert cache.get("A", 0.25) == "A@1000.0" and calls == ["A"]       # 0.25 s old: still good
    clock.t += 0.125
    assert cache.get("A", 0.25) == "A@1000.375" and calls == ["A", "A"]
    assert cache.get("B", 0.25) == "B@1000.375" and calls == ["A", "A", "B"]


def test_forget_drops_the_view_and_a_load_across_a_write_is_not_kept():
    clock = Clock()
    state = {"v": 1}
    writes_during_load = []

    def load(k):
        v = state["v"]
        for w in writes_during_load:         # a write lands while this load runs
            w()
        writes_during_load.clear()
        return v

    cache = RoomCache(load, clock=clock)
    assert cache.get("A", 10) == 1
    state["v"] = 2
    assert cache.get("A", 10) == 1           # another process's write: seen after max_age_s
    cache.forget("A")                        # this process's write: seen at once
    assert cache.get("A", 10) == 2
    cache.forget("A")
    writes_during_load.append(lambda: (state.update(v=3), cache.forget("A")))
    assert cache.get("A", 10) == 2           # loaded before the write: returned, not kept
    assert cache.get("A", 10) == 3


def test_concurrent_pollers_share_one_load_and_a_failed_load_is_not_kept():
    gate, started = threading.Event(), threading.Event()
    calls = []

    def load(k):
        calls.append(k)
        started.set()
        gate.wait(10)
        if len(calls) == 1:
            raise RuntimeError("database down")
        return "view"

    cache = RoomCache(load)
    out, errors = [], []

    def poll():
        try:
            out.append(cache.get("A", 60))
        except RuntimeError as e:
            errors.append(e)

    threads = [threading.Thread(target=poll) for _ in range(20)]
    for t in threads:
        t.start()
    assert started.wait(10)
    gate.set()
    for t in threads:
        t.join(10)
    # the first load failed for its caller only; the waiters loaded again, one of them for all
    assert len(errors) == 1 and out == ["view"] * 19 and len(calls) == 2


def test_the_oldest_rooms_are_dropped_beyond_max_rooms():
    cache = RoomCache(lambda k: k, max_rooms=3)
    for k in "ABCD":
        cache.get(k, 60)
    assert cache.loads == 4
    cache.get("A", 60)                         # dropped: loaded again
    cache.get("D", 60)                         # kept
    assert cache.loads == 5
