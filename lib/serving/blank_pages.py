"""Which sessions' pages are still blank: a measurement lets them draw first.

A timing stops every session's model work while it runs (lib.core.timing). So before it starts,
the computation that measures waits, at most its patience (lib.serving.memo), while another
session's page is blank: its script run is running, has drawn no figure yet, and is not itself
waiting (for a measurement to start, or for another session's computation of the same result).

Asking the compute slots alone (who waits for one, who holds one) missed two kinds of blank
page: one between two of its computations, and one whose script had started but not yet asked
for any. Under a class, timing sweeps started in those gaps and stopped everyone's first figures
for seconds at a time: py-spy of the server during the first 45 s of a class (2026-12-06) found
speculative-speed's measurements, each alone, in 25 s of them.

    with blank_pages.running(drawn):    # one script run (memo.script_run); drawn = [figures drawn]
        with blank_pages.waiting(drawn):    # a thread of that run waits for others' work
            ...
    blank_pages.others(drawn)           # blank, busy script runs besides this one
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

_lock = threading.Lock()
_runs: dict[int, list] = {}      # id(drawn) -> [drawn, threads of that run waiting now]


@contextmanager
def running(drawn: list):
    """While the block runs, the script run whose figure count is `drawn` counts as blank until
    drawn[0] > 0."""
    with _lock:
        _runs[id(drawn)] = [drawn, 0]
    try:
        yield
    finally:
        with _lock:
            _runs.pop(id(drawn), None)


@contextmanager
def waiting(drawn: list | None):
    """While the block runs, the script run `drawn` waits for someone else and is not counted
    (two measurements waiting for each other would each wait out their patience)."""
    with _lock:
        entry = _runs.get(id(drawn)) if drawn is not None else None
        if entry is not None and entry[0] is drawn:
            entry[1] += 1
        else:
            entry = None
    try:
        yield
    finally:
        if entry is not None:
            with _lock:
                entry[1] -= 1


def others(drawn: list | None) -> int:
    """How many script runs other than `drawn` are running, blank and not waiting."""
    with _lock:
        return sum(1 for d, waits in _runs.values() if d is not drawn and d[0] == 0 and waits == 0)
