"""Results kept in memory: one LRU over every cached function, bounded in bytes.

    MEMORY = Memory(budget)              # bytes
    MEMORY.put(k, value, size, prov, max_entries)   # k = (function name, key)
    MEMORY.get(k) -> (value, size, prov) | None

The least recently used result goes first when the total passes the budget, and a function keeps
at most `max_entries` results (its oldest goes first). A value larger than the whole budget is
not kept. Thread-safe.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict

from lib.serving.result_store import Provenance

BUDGET_BYTES = int(float(os.environ.get("LLM_LAB_RESULT_CACHE_MB", "192")) * 2**20)   # $LLM_LAB_RESULT_CACHE_MB, default 192


class Memory:
    """One LRU of (function name, key) -> (value, bytes, provenance), bounded in bytes."""

    def __init__(self, budget: int = BUDGET_BYTES):
        self.budget = budget
        self.items: OrderedDict = OrderedDict()
        self.per_fn: dict[str, int] = {}
        self.total = 0
        self.lock = threading.Lock()

    def get(self, k):
        with self.lock:
            if k in self.items:
                self.items.move_to_end(k)
                return self.items[k]
        return None

    def put(self, k, value, size: int, prov: Provenance, max_entries: int) -> None:
        with self.lock:
            if k in self.items:
                return
            if size > self.budget:
                return                       # too big to keep: the next caller recomputes (or reads disk)
            self.items[k] = (value, size, prov)
            self.per_fn[k[0]] = self.per_fn.get(k[0], 0) + 1
            self.total += size
            if self.per_fn[k[0]] > max_entries:
                self._evict(next(x for x in self.items if x[0] == k[0]))
            while self.total > self.budget and len(self.items) > 1:
                self._evict(next(iter(self.items)))

    def _evict(self, k) -> None:
        _, size, _ = self.items.pop(k)
        self.total -= size
        self.per_fn[k[0]] -= 1

    def clear(self) -> None:
        with self.lock:
            self.items.clear()
            self.per_fn.clear()
            self.total = 0
