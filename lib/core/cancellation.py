"""Cooperative cancellation: a computation nobody waits for any more stops between forward steps.

A student who moves a slider again, or closes the tab, before the result arrives no longer
wants it; thirty such stale computations would keep the two cores busy for nothing. Python
cannot interrupt a thread, so the computation looks itself:

    with wanted_while(probe):      # probe() -> False once nobody wants the result
        ...                        # the engine calls checkpoint() before every layer
                                   # (and a batched session before every step)

`checkpoint()` raises `Cancelled` in the computing thread once the innermost probe of that
thread says the result is not wanted; with no probe installed (a test, the benchmark, the
batching scheduler thread that runs many sessions' rows) it never raises. Probes nest: the
serving layer's memo installs "someone else waits for this key, or the caller still wants it",
so a result another session waits for is never stopped (single-flight stays).

The same checkpoints are where a long computation steps aside for a shorter one that waits
(`stepping_aside`, installed by the serving layer's compute slots).

`Cancelled` is a BaseException, like Streamlit's own stop: an `except Exception` in page code
does not swallow it, and a memo waiter treats it as "the owner went away, compute it myself".
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator

Probe = Callable[[], bool]          # True while the result is still wanted
_local = threading.local()


class Cancelled(BaseException):
    """Nobody wants this computation's result any more (raised by `checkpoint`)."""


def current_probe() -> Probe | None:
    """The innermost probe of this thread (None: nothing installed, never cancelled)."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


@contextmanager
def wanted_while(probe: Probe | None) -> Iterator[None]:
    """Install `probe` for this thread for the duration of the block (None: no change)."""
    if probe is None:
        yield
        return
    stack = _local.__dict__.setdefault("stack", [])
    stack.append(probe)
    try:
        yield
    finally:
        stack.pop()


def stop_if_unwanted() -> None:
    """Raise Cancelled if this thread's innermost probe says the result is no longer wanted."""
    probe = current_probe()
    if probe is not None and not probe():
        raise Cancelled("the result is no longer wanted")


def checkpoint() -> None:
    """`stop_if_unwanted()`, then this thread's step-aside hook (`stepping_aside`), if any."""
    stop_if_unwanted()
    hook = getattr(_local, "step_aside", None)
    if hook is not None:
        hook()


@contextmanager
def stepping_aside(hook: Callable[[], None]) -> Iterator[None]:
    """Inside the block, every checkpoint of this thread also calls `hook()`: between two
    forward steps a long computation may pause there to let a waiting one go first
    (lib.serving.compute_slots). Blocks do not nest: an inner one keeps the outer hook."""
    if getattr(_local, "step_aside", None) is not None:
        yield
        return
    _local.step_aside = hook
    try:
        yield
    finally:
        _local.step_aside = None
