"""`start(*calls)`: a page's independent computations side by side, collected later.

A page starts its model work before it draws its first figures, and its two generations from
one prompt (`start(lambda: cached(f)(...), lambda: cached(f)(...))`) share every batched step
of the engine (lib/decoding/batching.py) instead of taking turns: half the steps for the page,
and for a class half the batched steps, each with twice the rows (30 new prompts in one
process, side by side: 32 s one after the other, 21 s together).
Each call's thread carries what the caller's thread had: the script run's provenance list
(memo.run_provenance) and figure count, the background visitor's mark (prewarm) and the caller's cancellation
probe, so a page rerun stops its started calls too (lib.core.cancellation).
"""
from __future__ import annotations

import contextlib
import threading

from lib.core import cancellation, threads
from lib.serving import memo, prewarm


class Started:
    """Calls running in their own threads since `start(...)`; `.results()` waits for them."""

    def __init__(self, calls):
        used, drawn, background = getattr(memo._run, "used", None), getattr(memo._run, "drawn", None), \
            prewarm.in_background()
        probe = cancellation.current_probe()
        self.values, self.errors = [None] * len(calls), [None] * len(calls)

        def work(i):
            if used is not None:
                memo._run.used = used           # this script run's provenance list
            if drawn is not None:
                memo._run.drawn = drawn         # and its figure count (who computes next)
            memo._run.started = True            # behind the script runs' own computations (compute_slots)
            prewarm.mark_background(background)  # the background visitor's work stays background
            try:
                with threads.background_thread() if background else contextlib.nullcontext(), \
                        cancellation.wanted_while(probe):
                    self.values[i] = calls[i]()
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                self.errors[i] = e

        self.threads = [threading.Thread(target=work, args=(i,), name=f"started-{i}", daemon=True)
                        for i in range(len(calls))]
        for th in self.threads:
            th.start()

    def results(self) -> list:
        """Every call's result in order, once all have finished; the first error is raised."""
        for th in self.threads:
            th.join()
        for e in self.errors:
            if e is not None:
                raise e
        return self.values


def start(*calls) -> Started:
    """Start independent calls now, each in its own thread; collect them with `.results()`."""
    return Started(calls)
