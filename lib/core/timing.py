"""Timings that other visitors cannot distort.

On a shared server thirty sessions may run the model at once; a wall-clock measurement taken
meanwhile measures the crowd, not the algorithm. So model work and measurements share one
process-wide readers/writer lock:

    with model_work():          # any model computation (many at once)
        ...
    with exclusive():           # a measurement: waits until no other model work runs,
        ...                     # and new work waits until it is done

A process may forbid some threads to measure (`guard_measurements`): the background visitor
that precomputes pages runs at the lowest CPU priority, so anything else on the machine (a
browser drawing charts) would stretch its timings; it leaves them to the first real visitor.

The lock takes turns: a measurement waits for the work running when it asked, and the work
that asked while a measurement ran goes before the next measurement. A timing sweep is a chain
of measurements; without turns, the sweep's next measurement would always get in first and
every other session's model work would wait for the whole sweep.

A measurement stops every session's model work while it runs. So before it starts, it lets
the server's interactive work go first (`let_others_go_first`: the server registers how, e.g.
pages still blank, first figures waiting for a compute slot), for at most PATIENCE_S; a lecturer's class sees its
first figures before anybody's timing sweep, and the sweep runs on the quiet machine after them.

`measure(fn, repeats)` runs `fn` `repeats` times inside `exclusive()` and returns the median
with its spread and the machine's load average at that moment, so a page can say under which
conditions it measured. A thread that already holds `model_work()` may enter `exclusive()`
(its own share is set aside meanwhile), so a cached computation may time things.
"""
from __future__ import annotations

import os
import statistics
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass


class _ReadersWriter:
    """Readers share, a writer is alone, and they take turns (phase-fair): readers that arrive
    while a writer waits or writes wait; when the writer is done, every reader waiting then is
    let in before the next writer starts."""

    def __init__(self):
        self._cond = threading.Condition()
        self._readers = 0
        self._writer: int | None = None     # thread id of the measuring thread
        self._writers_waiting = 0
        self._phase = 0                     # writers done so far
        self._waiting: dict[int, int] = {}  # phase a reader began waiting in -> readers waiting
        self._mine = threading.local()      # per-thread count of held reader shares

    def _held(self) -> int:
        return getattr(self._mine, "n", 0)

    def _earlier_readers_waiting(self) -> bool:
        return any(came < self._phase for came in self._waiting)

    def _wait_turn_to_read(self) -> None:
        """(Holding self._cond.) Wait until a new reader may enter."""
        came = self._phase
        self._waiting[came] = self._waiting.get(came, 0) + 1
        # a reader that came before the last writer finished goes before the next one
        while self._writer is not None or (self._writers_waiting and came == self._phase):
            self._cond.wait()
        self._waiting[came] -= 1
        if not self._waiting[came]:
            del self._waiting[came]

    @contextmanager
    def read(self):
        me = threading.get_ident()
        with self._cond:
            if self._writer != me and self._held() == 0:
                self._wait_turn_to_read()
            self._readers += 1
            self._mine.n = self._held() + 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._mine.n = self._held() - 1
                self._cond.notify_all()

    @contextmanager
    def set_aside(self):
        """This thread's reader shares are given up for the block (a measurement may run
        meanwhile) and taken back after it, in turn like a new reader."""
        with self._cond:
            own = self._held()
            self._readers -= own
            self._mine.n = 0
            self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                if own:
                    self._wait_turn_to_read()
                self._readers += own
                self._mine.n = own

    def writing(self) -> bool:
        return self._writer == threading.get_ident()

    @contextmanager
    def write(self):
        me = threading.get_ident()
        if self._writer == me:              # nested measurement in the same thread
            yield
            return
        for guard in _GUARDS:
            guard()                         # may raise: this thread must not measure
        with self._cond:
            own = self._held()
            self._readers -= own            # set this thread's own shares aside
            self._cond.notify_all()
        try:
            for others_first in _OTHERS_FIRST:
                others_first(PATIENCE_S)    # interactive work goes first (bounded)
            with self._cond:
                self._writers_waiting += 1
                while self._writer is not None or self._readers > 0 or self._earlier_readers_waiting():
                    self._cond.wait()
                self._writers_waiting -= 1
                self._writer = me
        except BaseException:               # stopped while letting others go: the shares come back
            with self._cond:
                self._readers += own
            raise
        try:
            yield
        finally:
            with self._cond:
                self._writer = None
                self._readers += own
                self._phase += 1            # readers waiting now: their turn before the next writer
                self._cond.notify_all()


_LOCK = _ReadersWriter()
_GUARDS: list = []
_OTHERS_FIRST: list = []
PATIENCE_S = 60.0        # at most this long a measurement lets others' interactive work go first


def guard_measurements(check) -> None:
    """Call `check()` before every measurement starts; it raises to forbid the calling thread
    to measure (e.g. a thread running at low CPU priority)."""
    if check not in _GUARDS:
        _GUARDS.append(check)


def let_others_go_first(wait) -> None:
    """Before every measurement, call `wait(patience_s)` with this thread's model-work shares
    set aside: it returns when the measurement may start (no interactive work waits any more,
    or its patience is over). Registered once by the server (lib.serving.memo)."""
    if wait not in _OTHERS_FIRST:
        _OTHERS_FIRST.append(wait)


def model_work():
    """Context manager: ordinary model work (shared; waits while a measurement runs)."""
    return _LOCK.read()


def exclusive():
    """Context manager: a measurement (alone; waits for running model work to finish)."""
    return _LOCK.write()


def paused_model_work():
    """Context manager: this thread's model work pauses for the block (its shares are given
    up, so a measurement may run meanwhile) and resumes in turn after it."""
    return _LOCK.set_aside()


def measuring() -> bool:
    """Is this thread inside `exclusive()`?"""
    return _LOCK.writing()


def make_way_for_measurement() -> None:
    """Between two forward steps of model work: if a measurement waits, give this thread's
    model-work share up until it is done. A measurement then waits for one forward step of
    each running computation, not for the rest of it (thirty sessions' generations hold their
    shares for many seconds), and the work that asked meanwhile waits only for the measurement."""
    if _LOCK._writers_waiting and _LOCK._held() and not _LOCK.writing():
        with _LOCK.set_aside():
            pass


@dataclass(frozen=True)
class Timing:
    median_s: float
    min_s: float
    max_s: float
    repeats: int
    load_avg: float          # 1-minute load average of the machine when measured
    cpus: int

    @property
    def spread_s(self) -> float:
        return self.max_s - self.min_s


def measure(fn, repeats: int = 5, warmup: int = 1) -> Timing:
    """Run fn() warmup + repeats times alone (inside `exclusive()`); the median of the repeats
    with its min and max."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    with exclusive():
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return Timing(statistics.median(times), min(times), max(times), repeats, load, os.cpu_count() or 1)
