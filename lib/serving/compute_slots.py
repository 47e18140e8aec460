"""At most N computations at once, and who goes next: first figures first.

    slots = ComputeSlots(2)
    with slots.hold(priority=len(results_this_run_has)):     # waits its turn
        compute()

A waiting computation with a lower priority number goes first; equal numbers go in the order
they asked. The memo asks with the number of results the asking script run already has, so a
student whose page has nothing on screen yet goes before the fourth computation of a page that
already shows three figures: under a class, every page's first figure comes early, instead of
whoever asks again fastest taking every free slot (a plain semaphore lets a thread that just
released its slot take it back before the waiters wake up).

While waiting, `cancellation.checkpoint()` runs every 0.1 s: a computation nobody wants any
more leaves the queue.
"""
from __future__ import annotations

import heapq
import itertools
import threading
from contextlib import contextmanager

from lib.core import cancellation


class ComputeSlots:
    def __init__(self, n: int):
        if n < 1:
            raise ValueError("at least one slot")
        self.n = n
        self.free = n
        self._cond = threading.Condition()
        self._queue: list[tuple[int, int]] = []     # heap of (priority, ticket number)
        self._tickets = itertools.count()

    @contextmanager
    def hold(self, priority: int = 0):
        """Hold one slot for the `with` block; wait for it behind lower priority numbers."""
        with self._cond:
            ticket = (priority, next(self._tickets))
            heapq.heappush(self._queue, ticket)
            try:
                while not (self.free and self._queue[0] == ticket):
                    self._cond.wait(0.1)
                    cancellation.checkpoint()
            except BaseException:
                self._queue.remove(ticket)
                heapq.heapify(self._queue)
                self._cond.notify_all()
                raise
            heapq.heappop(self._queue)
            self.free -= 1
            self._cond.notify_all()             # the next in line may take another free slot
        try:
            yield
        finally:
            with self._cond:
                self.free += 1
                self._cond.notify_all()

    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)
