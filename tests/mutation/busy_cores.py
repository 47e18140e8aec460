"""A deliberately loaded machine for the timing tests (issue 32 item 5): one busy-looping
process per core, twice over, for as long as the `with` block runs, and the share of the cores other
programs kept busy during it, measured as the chunked-prefill page measures its load.
Twice over: the test's own torch threads compete with the spinners for the same cores, so
one spinner per core gets only about half of the machine (0.49 measured in a .ci/run)."""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import time


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@contextlib.contextmanager
def busy_cores(limit_s: float = 120.0):
    """`with busy_cores() as load:` ... ; afterwards load["others"] is the measured share
    (0..1) of the machine's cores that the spinners and any other program kept busy."""
    from lib.concepts.chunked_prefill.real_schedule import cpu_snapshot, others_share

    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_spin, args=(limit_s,), daemon=True) for _ in range(2 * (os.cpu_count() or 1))]
    for p in procs:
        p.start()
    time.sleep(0.5)                                             # the spinners are running
    load, before = {}, cpu_snapshot()
    try:
        yield load
    finally:
        load["others"] = others_share(before, cpu_snapshot())
        for p in procs:
            p.terminate()
            p.join()
