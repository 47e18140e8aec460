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
    done, session_wants = [], threading.Event()
    session_wants.set()
    threading.Timer(0.1, session_wants.clear).start()       # the student moves the slider again
    with wanted_while(session_wants.is_set), pytest.raises(Cancelled):
        m(200, done.append)
    assert 0 < len(done) < 200
    again = []
    assert m(5, again.append) == 5 and again == list(range(5))    # the next caller computes afresh


def test_a_result_another_session_waits_for_is_never_stopped(fresh):
    m = memo.Memo(steps, arg_key)
    owner_done, got, owner_wants = [], [], threading.Event()
    owner_wants.set()

    def owner():
        try:
            with wanted_while(owner_wants.is_set):
                got.append(("owner", m(40, owner_done.append)))
        except Cancelled:
            got.append(("owner", "cancelled"))

    t = threading.Thread(target=owner)
    t.start()
    time.sleep(0.05)
    waiter = threading.Thread(target=lambda: got.append(("waiter", m(40, owner_done.append))))
    waiter.start()
    time.sleep(0.1)
    owner_wants.clear()                                # the owner's student leaves; the waiter stays
    t.join(10)
    waiter.join(10)
    assert ("waiter", 40) in got
    assert len(owner_done) == 40                       # computed once, to the end, for the waiter


def test_started_calls_carry_the_callers_probe():
    done, wants = [], threading.Event()
    wants.set()
    with wanted_while(wants.is_set):
        started = jobs.start(lambda: steps(300, done.append))
        time.sleep(0.1)
        wants.clear()
        with pytest.raises(Cancelled):
            started.results()
    assert 0 < len(done) < 300
