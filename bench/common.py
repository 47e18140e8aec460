"""Helpers shared by benchmark modules."""
from __future__ import annotations

import statistics
import time


def run_times(fn, repeat: int = 3, warmup: int = 1) -> list[float]:
    """Wall times of fn() in seconds, `repeat` runs after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def median_time(fn, repeat: int = 3, warmup: int = 1) -> float:
    """Median wall time of fn() in seconds over `repeat` runs after `warmup` runs."""
    return statistics.median(run_times(fn, repeat, warmup))


def best_time(fn, repeat: int = 5, warmup: int = 1) -> float:
    """Shortest wall time of fn() in seconds over `repeat` runs after `warmup` runs: for a lower
    bound (bench/floors.py), where a slow spell of the machine must not raise the bound. Report
    medians (median_time) for everything else."""
    return min(run_times(fn, repeat, warmup))
