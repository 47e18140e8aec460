"""Helpers shared by benchmark modules."""
from __future__ import annotations

import statistics
import time


def median_time(fn, repeat: int = 3, warmup: int = 1) -> float:
    """Median wall time of fn() in seconds over `repeat` runs after `warmup` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def best_time(fn, repeat: int = 5, warmup: int = 1) -> float:
    """Shortest wall time of fn() in seconds over `repeat` runs after `warmup` runs: for a lower
    bound (bench/floors.py), where a slow spell of the machine must not raise the bound. Report
    medians (median_time) for everything else."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
