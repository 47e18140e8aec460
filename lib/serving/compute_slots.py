"""At most N computations at once, and who goes next: first figures first.

    slots = ComputeSlots(2)
    with slots.hold(priority=figures_drawn * PER_FIGURE) as held:     # waits its turn
        compute()          # calls held.make_way() between its forward steps

A waiting computation with a lower priority number goes first; equal numbers go in the order
they asked. The memo asks with the number of figures the asking script run has drawn, so a
student whose page has nothing on screen yet goes before the next computation of a page that
already shows three figures, however many cached results either used before (a page that needs
ten small results for its first figure is not put behind every other page's first ones).

A computation that holds its slot long gets a larger number: one more for every QUANTUM_S
seconds it held it, at most MAX_AGE more (beyond that, long computations of one level keep
their order instead of taking turns: taking turns finished every long first figure of a class
together, at the end). At each checkpoint between its forward steps (lib.core.cancellation) it
calls `held.make_way()`: when a computation with a smaller number waits, it gives its slot
up there and waits for its turn again. So a first figure waits for one forward step of a
long evaluation, not for all of it (a multilevel feedback queue, as operating systems give
interactive programs the processor first). Under a class (2026-12-05, thirty sessions, two
slots): the slots were held by two sessions' checks while twenty-five others waited for a
first figure. The quantum is wall time, and on two busy cores a computation of 0.2-0.5 s alone
takes over a second: with a 1 s quantum such short first figures aged, stepped aside and then
waited behind every new blank-page computation (first chart p95 of a class 51 s; with 3 s, 8.9 s,
2026-12-06).

A figure on screen weighs more than any time held: the memo asks with PER_FIGURE per figure, so
a blank page's computation, however long it has run, still goes before the next computation of
a page that shows a figure (without it, a long first figure such as a beam search was put
behind every other page's later work and came last under a class). A figure drawn while a
computation runs counts too (`Held.level`): once beam-search has drawn its tree after the first
step, the rest of its search goes on as a page that shows a figure, not as a blank page's first
figure (py-spy at 10 s of a class, 2026-12-06: two such searches held both slots while the
blank pages' first computations waited).

A call a page started to collect later (lib.serving.jobs: its checks, its later sections) asks
with STARTED more than the page's own computations at the same figure count: after every blank
page's own first-figure work, before the next computation of any page that shows a figure.
Otherwise the checks a page starts before its first figure queue with the class's first figures,
and a first figure that needs several computations one after another queues behind them each time.

While waiting, the computation's own cancellation probe runs every 0.1 s: a computation nobody
wants any more leaves the queue.

A measurement stops every session's model work while it runs (lib.core.timing), so before it
starts, the computation that measures lets the others with a number no larger than its own go
first (`ahead_of`, `step_aside_while`), and so does every other page still blank
(lib.serving.blank_pages, which also sees a blank page between two of its computations): under
a class the first figures come before the timing sweeps, which run when the machine is quiet
(or when their patience runs out). Background
pre-computation never counts as someone ahead, nor does the measuring page's own work (`run`:
its script run and the calls it started), which the measurement pauses between forward steps.
"""
from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from contextlib import contextmanager

from lib.core import cancellation

QUANTUM_S = 3.0          # seconds held per step of age: longer than a short computation under a class
MAX_AGE = 5              # quanta: long computations then keep their order (first come, first done)
PER_FIGURE = 1000        # > MAX_AGE: a figure on screen weighs more than any time held
STARTED = PER_FIGURE // 2  # a started call (lib.serving.jobs) queues behind its level's own computations


class Held:
    """One computation's slot (see the module docstring)."""

    def __init__(self, slots: "ComputeSlots", priority: int, background: bool = False, run=None):
        self.slots, self.priority, self.background, self.run = slots, priority, background, run
        self.drawn_when_asked = self._drawn()
        self.age = 0                         # quanta held before `since`, at most MAX_AGE
        self.since = time.monotonic()        # holding since (or last demoted at)
        self.holding = True
        self._busy = False

    def _drawn(self) -> int:
        """Figures its script run has drawn so far (0 for nobody's work: `run` is None)."""
        return 0 if self.run is None else self.run[0]

    def level(self) -> int:
        """The number it asked with, plus PER_FIGURE for every figure its script run drew since:
        a computation that drew its page's first figure while it runs (beam-search's tree so
        far) goes on as the computation of a page that shows a figure."""
        return self.priority + (self._drawn() - self.drawn_when_asked) * PER_FIGURE

    def number(self, now: float) -> int:
        """Its number now: its level, plus one for every QUANTUM_S seconds held, at most
        MAX_AGE more."""
        return self.level() + min(self.age + int((now - self.since) // QUANTUM_S), MAX_AGE)

    def make_way(self, pause=contextlib.nullcontext) -> bool:
        """Between two forward steps: give the slot up if a computation with a smaller number
        waits, and take it back in turn; `pause()` wraps the wait (the memo gives up its
        model-work share there). True if it stepped aside."""
        if self._busy or not self.holding:
            return False
        now = time.monotonic()
        if now - self.since >= QUANTUM_S:
            self.age, self.since = min(self.age + int((now - self.since) // QUANTUM_S), MAX_AGE), now
        if not self.slots.someone_before(self.level() + self.age):
            return False
        self._busy = True
        try:
            with pause():
                self.holding = False
                self.slots._release()
                self.slots._acquire(self.level() + self.age, self.background, self.run)
                self.holding = True
        finally:
            self._busy = False
        self.since = time.monotonic()
        self.slots.stepped_aside += 1
        return True

    def step_aside_while(self, others_first, poll_s: float = 0.1) -> None:
        """Give the slot up while `others_first()` is true (checked every `poll_s`), then take
        it back at the head of the queue: it has waited its turn. The cancellation probe runs
        meanwhile; a computation stopped here leaves without its slot."""
        if self._busy or not self.holding:
            return
        self.holding = False
        self.slots._release()
        while others_first():
            time.sleep(poll_s)
            cancellation.stop_if_unwanted()
        self.slots._acquire(-1, self.background, self.run)
        self.holding = True
        self.since = time.monotonic()


class ComputeSlots:
    def __init__(self, n: int):
        if n < 1:
            raise ValueError("at least one slot")
        self.free = n
        self.stepped_aside = 0                      # times a computation gave its slot up (for tests)
        self._cond = threading.Condition()
        self._queue: list[tuple] = []       # heap of (priority, ticket number, background, run);
        # tickets are unique, so neither the heap nor a ticket's equality ever compares two runs
        self._tickets = itertools.count()
        self._holders: set[Held] = set()

    @contextmanager
    def hold(self, priority: int = 0, background: bool = False, run=None):
        """Hold one slot for the `with` block; wait for it behind smaller priority numbers.
        `background`: the background pre-computation's (never ahead of a measurement); `run`:
        whose work it is, as that script run's figure counter, a one-item list [figures drawn]
        (the memo's `_run.drawn`; compared by identity: never ahead of a measurement of the same
        run; its growth raises `Held.level`), or None for nobody's work."""
        self._acquire(priority, background, run)
        held = Held(self, priority, background, run)
        with self._cond:
            self._holders.add(held)
        try:
            yield held
        finally:
            with self._cond:
                self._holders.discard(held)
            if held.holding:
                self._release()

    def someone_before(self, priority: int) -> bool:
        """Does a computation with a smaller priority number wait?"""
        with self._cond:
            return bool(self._queue) and self._queue[0][0] < priority

    def ahead_of(self, me: Held, number: int | None = None) -> bool:
        """Does another run's computation (background work aside) wait for a slot here, or
        hold one, with a number no larger than `number` (default: `me`'s now)? Holders' numbers
        grow while they hold (at most MAX_AGE), so a long computation of a level above stops
        being ahead."""
        now = time.monotonic()
        mine = me.number(now) if number is None else number
        with self._cond:
            if any(p <= mine for p, _, bg, run in self._queue if not bg and (me.run is None or run is not me.run)):
                return True
            return any(h is not me and h.holding and not h.background and h.number(now) <= mine
                       and (me.run is None or h.run is not me.run) for h in self._holders)

    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)

    def _acquire(self, priority: int, background: bool = False, run=None) -> None:
        with self._cond:
            ticket = (priority, next(self._tickets), background, run)
            heapq.heappush(self._queue, ticket)
            try:
                while not (self.free and self._queue[0] == ticket):
                    self._cond.wait(0.1)
                    cancellation.stop_if_unwanted()
            except BaseException:
                self._queue.remove(ticket)
                heapq.heapify(self._queue)
                self._cond.notify_all()
                raise
            heapq.heappop(self._queue)
            self.free -= 1
            self._cond.notify_all()             # the next in line may take another free slot

    def _release(self) -> None:
        with self._cond:
            self.free += 1
            self._cond.notify_all()
