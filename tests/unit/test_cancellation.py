"""Cooperative cancellation (lib.core.cancellation) through the serving layer: a computation
nobody wants any more stops between forward steps, unless another session waits for it."""
from __future__ import annotations

import threading
import time

import pytest
import torch

from lib.core import cancellation
from lib.core.cancellation import Cancelled, checkpoint, wanted_while
from lib.serving import jobs, memo
from lib.serving.results import arg_key
from tests.conftest import tiny_gemma3


def test_checkpoint_raises_only_when_the_innermost_probe_says_unwanted():
    checkpoint()                                       # no probe: never
    with wanted_while(lambda: True):
        checkpoint()
        with wanted_while(lambda: False):
            with pytest.raises(Cancelled):
                checkpoint()
        checkpoint()                                   # the inner probe is gone again
    assert cancellation.current_probe() is None
    assert not issubclass(Cancelled, Exception)       # page code's `except Exception` lets it through


def test_the_engine_stops_between_layers_when_its_result_is_unwanted():
    from lib.model.from_transformers import engine_from_hf

    engine = engine_from_hf(tiny_gemma3(0))
    ids = torch.tensor([[2, 5, 7, 11]])
    layers_run = []
    wanted = iter([True, True, True, False])          # the session reruns during layer 2
    with wanted_while(lambda: next(wanted)):
        with pytest.raises(Cancelled):
            engine.forward(ids, engine.new_cache(), hooks={"attn_out": lambda l, x: layers_run.append(l) or x})
    assert len(layers_run) < engine.spec.n_layers
    out = engine.forward(ids, engine.new_cache())     # nothing left behind: a new run is whole
    assert out.shape == (1, 1, 97)                    # tiny_gemma3's vocabulary


def steps(n: int, record, delay: float = 0.01) -> int:
    """A stand-in for a generation: n forward steps, each a cancellation point; `record(i)`
    after step i (a callable: the memo does not key on it)."""
    for i in range(n):
        checkpoint()
        time.sleep(delay)
        record(i)
    return n


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    monkeypatch.setattr(memo, "STORE", memo.ResultStore(tmp_path))
    memo.MEMORY.clear()
    yield


def test_a_stale_computation_stops_and_is_not_kept(fresh):
    m = memo.Memo(steps, arg_key)
    done = []
    with wanted_while(lambda: len(done) < 5), pytest.raises(Cancelled):   # unwanted after step 5
        m(200, done.append)
    assert done == [0, 1, 2, 3, 4]                     # stopped at the next step, not at the end
    again = []
    assert m(3, again.append) == 3 and again == [0, 1, 2]   # nothing half-done was kept


def wait_until(condition, timeout_s: float = 60.0) -> None:
    end = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < end:
        time.sleep(0.005)


def test_a_result_another_session_waits_for_is_never_stopped(fresh):
    m = memo.Memo(steps, arg_key)
    owner_done, got, owner_leaves = [], [], threading.Event()
    owner = threading.Thread(target=lambda: got.append(
        ("owner", _run_wanted(lambda: not owner_leaves.is_set(), lambda: m(40, owner_done.append, 0.02)))))
    owner.start()
    wait_until(lambda: len(owner_done) >= 2)
    waiter = threading.Thread(target=lambda: got.append(("waiter", m(40, owner_done.append, 0.02))))
    waiter.start()
    wait_until(lambda: any(f.waiters for f in list(memo._inflight.values())) or len(owner_done) == 40)
    owner_leaves.set()                                 # the owner's student leaves; the waiter stays
    owner.join(60)
    waiter.join(60)
    assert ("waiter", 40) in got
    assert owner_done == list(range(40))               # computed once, to the end, for the waiter


def _run_wanted(probe, fn):
    try:
        with wanted_while(probe):
            return fn()
    except Cancelled:
        return "cancelled"


def test_started_calls_carry_the_callers_probe():
    done = []
    with wanted_while(lambda: len(done) < 7):
        started = jobs.start(lambda: steps(300, done.append, 0.0))
        with pytest.raises(Cancelled):
            started.results()
    assert done == list(range(7))
