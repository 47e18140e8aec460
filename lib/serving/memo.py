"""The process-wide memo behind `runtime.cached`: shared by every session, single-flight,
bounded in bytes, persisted to the cache folder.

For one key (function, its arguments' values, the model's key; a keyword argument whose name
starts with "_" is not part of it: a progress callback, or a value the others determine, such as
an already computed reference run):
1. in memory          -> returned at once;
2. in flight          -> this caller waits for the thread computing it and gets the same
                         result (or the same exception; if that session was stopped or rerun,
                         the waiter computes it itself): thirty identical sessions compute once;
3. in the cache folder (same code version) -> loaded (a restarted server shows defaults at once);
4. otherwise          -> computed inside `model_work()` (so a timed measurement elsewhere runs
                         alone), at most `LLM_LAB_WORKERS` computations at once (default: half
                         the cores, at least 2: bounds the class's transient memory; a script
                         run with fewer figures on screen goes first: lib.serving.compute_slots) -- except
                         generations whose forwards join the engine's batches
                         (lib.decoding.batching.joins_batches): up to `LLM_LAB_BATCHED_WORKERS`
                         (64) of them run side by side and share each batched step -- then
                         stored in memory, and on disk if `persist_if(provenance)` says so
                         (runtime.cached: every default state, and what took >= 1 s).
A computation nobody wants any more stops between forward steps (lib.core.cancellation): the
caller's probe (its session was rerun or closed) is combined with this key's waiters, so a
result another session waits for is never stopped; a waiter whose owner stopped computes it.
Background work (`before_compute`, the prewarm visitor yielding) waits before it takes a key's
flight, never while holding one: otherwise a visitor waiting for that key would wait for a
thread that waits for the visitor (this deadlock hung a page in CI).
Memory is one LRU over all functions with a total byte budget (`LLM_LAB_RESULT_CACHE_MB`,
default 192) and, per function, at most `max_entries` results. Results are shared between
sessions: treat them as read-only. Each script run collects where its results came from
(`run_provenance`), for the page's caption.
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

from lib.core import cancellation, timing
from lib.core.timing import make_way_for_measurement, measuring, model_work, paused_model_work
from lib.serving import blank_pages, compute_slots, prewarm, result_store
from lib.serving.heap import trim_memory
from lib.serving.compute_slots import ComputeSlots
from lib.serving.result_memory import Memory
from lib.serving.result_store import Provenance, ResultStore, nbytes

# At most this many computations at once: more only multiplies the transient memory (each holds
# its activations) on a machine whose cores are already busy; the rest wait their turn.
WORKERS = int(os.environ.get("LLM_LAB_WORKERS", "0")) or max(2, (os.cpu_count() or 2) // 2)
_workers = ComputeSlots(WORKERS)
# Generations that join the engine's batches (lib.decoding.batching.joins_batches) have their own,
# larger limit: together they share each batched step, and each holds only its short cache and
# one step's logits (at most a few choose their next token at once: generate.CHOOSING). A class
# of 30 on the temperature page runs 60 (two per prompt). 30 new prompts on a fresh server, one
# after another (2026-12-01, before the last memory fixes): 16 -> p95 53.8 s, 32 -> 39.2 s, 64 -> 30.9 s.
BATCHED_WORKERS = int(os.environ.get("LLM_LAB_BATCHED_WORKERS", "64"))
_batched_workers = ComputeSlots(BATCHED_WORKERS)


@dataclass
class Used:
    """One result a script run used, and where it came from."""
    fn: str
    origin: str              # "computed" (this run) | "shared" (another session's, or waited for) | "disk"
    prov: Provenance


class _Flight:
    def __init__(self):
        self.done = threading.Event()
        self.value = None
        self.error: BaseException | None = None
        self.origin = "computed"
        self.prov: Provenance | None = None
        self.waiters = 0             # other callers waiting for this result right now


MEMORY = Memory()
STORE = ResultStore()
_inflight: dict = {}
_inflight_lock = threading.Lock()
_run = threading.local()      # this script thread's provenance list
stats = {"computed": 0, "waited": 0, "memory": 0, "disk": 0}


def begin_run() -> None:
    _run.used = []
    _run.drawn = [0]              # figures this script run has drawn (shared with its started calls)
    _run.patient_until = None


@contextmanager
def script_run():
    """One script run (app.py): `begin_run`, and while it runs, unless it is the background
    visitor's, a blank page that measurements let draw first (lib.serving.blank_pages)."""
    begin_run()
    with contextlib.nullcontext() if prewarm.in_background() else blank_pages.running(_run.drawn):
        yield


def figure_drawn() -> None:
    """The script run drew a figure: its later computations queue behind those of runs that
    have drawn fewer (lib.serving.compute_slots)."""
    drawn = getattr(_run, "drawn", None)
    if drawn is not None:
        drawn[0] += 1


def run_provenance() -> list[Used]:
    return list(getattr(_run, "used", []))


def _note(fn_name: str, origin: str, prov: Provenance | None) -> None:
    if prov is not None and hasattr(_run, "used"):
        _run.used.append(Used(fn_name, origin, prov))


def _slot(workers: ComputeSlots):
    """One of `workers` for this computation, in its turn: a script run that has drawn fewer
    figures goes first (a blank page before one that shows three), and at equal figures the
    script's own computations before the calls it started (`STARTED`). Between its forward steps
    a long computation steps aside for one that waits with a smaller number
    (lib.serving.compute_slots), giving up its model-work share meanwhile, and for a measurement
    that waits; never inside a measurement. One inside another holds its slot already."""
    if getattr(_run, "in_slot", False):
        return contextlib.nullcontext()
    drawn, later = getattr(_run, "drawn", None), compute_slots.STARTED if getattr(_run, "started", False) else 0
    return _holding(workers, (drawn or [0])[0] * compute_slots.PER_FIGURE + later, drawn)


@contextmanager
def _holding(workers: ComputeSlots, priority: int, run=None):
    def make_way():
        if not measuring():
            held.make_way(paused_model_work)
            make_way_for_measurement()

    with workers.hold(priority, prewarm.in_background(), run) as held, cancellation.stepping_aside(make_way):
        _run.in_slot, _run.held = True, held
        try:
            yield
        finally:
            _run.in_slot, _run.held = False, None


def _wait_for(flight: _Flight) -> None:
    """Wait for another thread's computation of the same key. A computation that waits inside
    its own slot gives the slot (and its model-work share) up meanwhile: the thread it waits for
    may itself be waiting for that slot."""
    held = getattr(_run, "held", None) if getattr(_run, "in_slot", False) else None
    with blank_pages.waiting(getattr(_run, "drawn", None)):
        if held is None:
            while not flight.done.wait(0.1):
                cancellation.checkpoint()              # this waiter's own session went away
            return
        with paused_model_work():
            held.step_aside_while(lambda: not flight.done.wait(0.05), poll_s=0.0)


def _first_figures_before_measuring(patience_s: float) -> None:
    """Before a measurement in a computation (lib.core.timing): while another session's page is
    blank (lib.serving.blank_pages), or another session's computation with a number no larger
    than this one's when it asked waits for a slot or holds one, give the slot up and wait (the
    script run's own calls, which share its figure count `_run.drawn`, do not count: the
    measurement pauses them). A script thread waits so at most `patience_s` in all, over all its
    measurements (a started call's thread has its own); then they take their turn like any other."""
    held = getattr(_run, "held", None)
    if held is None or held.background:
        return
    pools, mine, drawn = (_workers, _batched_workers), held.number(time.monotonic()), getattr(_run, "drawn", None)

    def others_first() -> bool:
        return blank_pages.others(drawn) > 0 or any(p.ahead_of(held, mine) for p in pools)

    if not others_first():
        return
    if getattr(_run, "patient_until", None) is None:
        _run.patient_until = time.monotonic() + patience_s
    until = _run.patient_until
    with blank_pages.waiting(drawn):
        held.step_aside_while(lambda: time.monotonic() < until and others_first())


timing.let_others_go_first(_first_figures_before_measuring)


class Memo:
    """`Memo(fn, key_of, max_entries)(*args, **kw)`: see the module docstring."""

    def __init__(self, fn, key_of, max_entries: int = 32, before_compute=None, persist_if=None):
        self.fn, self.key_of, self.max_entries = fn, key_of, max_entries
        self.name = result_store.fn_name(fn)
        self.before_compute = before_compute      # e.g. background work yields to visitors here
        self.persist_if = persist_if              # prov -> write this computed result to disk? (None: always)
        functools.update_wrapper(self, fn)

    def _keys(self, args, kwargs) -> tuple:
        """(the result store's key of these arguments, the memory's key: (name, that key))."""
        key = (tuple(self.key_of(a) for a in args),
               tuple((k, self.key_of(v)) for k, v in sorted(kwargs.items()) if not k.startswith("_")))
        return key, (self.name, key)

    def _remembered(self, k):
        """(value, bytes, provenance) of memory key `k` if this server holds it in memory (the
        page's provenance note says whether it was computed here or read from disk), else None."""
        hit = MEMORY.get(k)
        if hit is not None:
            _note(self.name, "shared" if hit[2].this_process else "disk", hit[2])
        return hit

    def peek(self, *args, **kwargs):
        """The result of fn(*args) if this server already has it (in memory or in the cache
        folder), else None; never computes, never waits for a flight. For a page that can
        answer from a larger result it already has (a slice of a longer evaluation) and
        would otherwise compute a smaller one."""
        key, k = self._keys(args, kwargs)
        hit = self._remembered(k)
        if hit is not None:
            return hit[0]
        loaded = STORE.load(self.fn, key)
        if loaded is None:
            return None
        value, prov = loaded
        MEMORY.put(k, value, nbytes(value), prov, self.max_entries)
        _note(self.name, "disk", prov)
        return value

    def __call__(self, *args, **kwargs):
        key, k = self._keys(args, kwargs)
        hit = self._remembered(k)
        if hit is not None:
            stats["memory"] += 1
            return hit[0]
        if self.before_compute is not None and not getattr(_run, "holding", 0):
            # Background work yields to visitors HERE, before it owns a flight: a visitor never
            # waits on a flight whose owner waits for that visitor to finish.
            self.before_compute()
            hit = self._remembered(k)
            if hit is not None:
                return hit[0]
        with _inflight_lock:
            flight = _inflight.get(k)
            mine = flight is None
            if mine:
                flight = _inflight[k] = _Flight()
        if not mine:
            stats["waited"] += 1
            with _inflight_lock:
                flight.waiters += 1
            try:
                _wait_for(flight)
            finally:
                with _inflight_lock:
                    flight.waiters -= 1
            if isinstance(flight.error, Exception):
                raise flight.error
            if flight.error is not None:
                # The computing session was stopped or rerun (Streamlit's control-flow
                # exceptions belong to that session alone): compute it here instead.
                return self(*args, **kwargs)
            _note(self.name, "shared" if flight.origin == "computed" else flight.origin, flight.prov)
            return flight.value
        _run.holding = getattr(_run, "holding", 0) + 1     # nested memo calls inside fn never yield
        try:
            loaded = STORE.load(self.fn, key)
            if loaded is not None:
                flight.value, flight.prov = loaded
                flight.origin = "disk"
                stats["disk"] += 1
            else:
                outer = cancellation.current_probe()
                wanted = None if outer is None else (lambda: flight.waiters > 0 or outer())
                with cancellation.wanted_while(wanted), \
                        _slot(_batched_workers if getattr(self.fn, "joins_batches", False) else _workers):
                    t0 = time.perf_counter()
                    with model_work():
                        flight.value = self.fn(*args, **kwargs)
                    flight.prov = Provenance.now(time.perf_counter() - t0)
                if flight.prov.seconds > 0.2:
                    trim_memory(unless_within_s=1.0)
                stats["computed"] += 1
            size = nbytes(flight.value)
            MEMORY.put(k, flight.value, size, flight.prov, self.max_entries)
            if flight.origin == "computed" and (self.persist_if is None or self.persist_if(flight.prov)):
                STORE.save(self.fn, key, flight.value, flight.prov, size)
            _note(self.name, flight.origin, flight.prov)
            return flight.value
        except BaseException as e:
            flight.error = e
            raise
        finally:
            _run.holding -= 1
            flight.done.set()
            with _inflight_lock:
                _inflight.pop(k, None)
