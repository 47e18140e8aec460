"""Recent room views for pollers: 200 students polling every 2 s ask for the same room ~100
times a second; the answer changes only when the lecturer moves, reveals or resets.

`RoomCache(load, clock)`; `get(key, max_age_s)` returns what `load(key)` returned at most
`max_age_s` seconds ago (on `clock`, monotonic), else calls `load` afresh. Single flight: while
one caller loads a key, the others asking for it wait for that load and share its result, so a
room costs at most one query per `max_age_s` however many poll it. A load that raises is not
kept (each waiter then loads for itself). None (no such room) is kept like any view.
`forget(key)`: this process wrote to the room; the next `get` loads. A load that began before a
`forget` (of any key) is returned to its callers but not kept, so a view loaded before a write
and read after it is never served from the cache.
Staleness: a write made by another process (another replica on the same PostgreSQL, another
process on the same SQLite file) is seen at most `max_age_s` late; this process's own writes at
once. Memory: at most `max_rooms` entries (the oldest dropped first). Thread-safe.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Generic, Hashable, TypeVar

V = TypeVar("V")


class RoomCache(Generic[V]):
    """Views by key, each kept for the `max_age_s` its caller accepts (see the module docstring)."""

    def __init__(self, load: Callable[[Hashable], V], clock: Callable[[], float] = time.monotonic,
                 max_rooms: int = 1024):
        self._load, self._clock, self._max = load, clock, max_rooms
        self._lock = threading.Lock()
        self._entries: dict[Hashable, tuple[float, V]] = {}    # key -> (loaded at, view)
        self._loading: dict[Hashable, threading.Event] = {}
        self._writes = 0                                       # forget() calls so far
        self.loads = 0                                         # load() calls so far (tests)

    def get(self, key: Hashable, max_age_s: float) -> V:
        while True:
            with self._lock:
                hit = self._entries.get(key)
                if hit is not None and self._clock() - hit[0] <= max_age_s:
                    return hit[1]
                busy = self._loading.get(key)
                if busy is None:
                    done = self._loading[key] = threading.Event()
                    writes, self.loads = self._writes, self.loads + 1
                    break
            busy.wait()                       # another caller loads it: share its result
        try:
            started = self._clock()
            view = self._load(key)
            with self._lock:
                if self._writes == writes:
                    self._entries.pop(key, None)
                    self._entries[key] = (started, view)
                    while len(self._entries) > self._max:
                        self._entries.pop(next(iter(self._entries)))
            return view
        finally:
            with self._lock:
                self._loading.pop(key, None)
            done.set()

    def forget(self, key: Hashable) -> None:
        with self._lock:
            self._writes += 1
            self._entries.pop(key, None)
