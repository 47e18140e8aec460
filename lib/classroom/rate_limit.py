"""A token bucket per client, so one flooding session is refused while the others go on.

Each key (a room code and a session id) holds up to `capacity` tokens, refilled at
`capacity / per_seconds` a second; an answer spends one. The buckets live in this process (with
several replicas each replica limits on its own, which still bounds any one connection: a
Streamlit session lives on one replica). Idle buckets are dropped, so memory stays bounded by the
clients of the last `per_seconds`.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Hashable


class TokenBucket:
    """`allow(key)` -> True and spends a token, or False when `key` has none left."""

    def __init__(self, capacity: int = 5, per_seconds: float = 10.0,
                 clock: Callable[[], float] = time.monotonic, max_keys: int = 100_000):
        self.capacity = float(capacity)
        self.rate = capacity / per_seconds           # tokens per second
        self.per_seconds = per_seconds
        self.clock = clock
        self.max_keys = max_keys
        self._buckets: dict[Hashable, tuple[float, float]] = {}   # key -> (tokens, when)
        self._lock = threading.Lock()
        self._last_sweep = clock()

    def allow(self, key: Hashable) -> bool:
        """Spend one of `key`'s tokens if it has one; never blocks."""
        now = self.clock()
        with self._lock:
            if now - self._last_sweep > self.per_seconds or len(self._buckets) > self.max_keys:
                self._sweep(now)
            tokens, when = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - when) * self.rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                return False
            self._buckets[key] = (tokens - 1.0, now)
            return True

    def _sweep(self, now: float) -> None:
        """Drop buckets that are full again (idle for per_seconds): they equal a fresh one."""
        self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < self.per_seconds}
        self._last_sweep = now

    def __len__(self) -> int:
        return len(self._buckets)
