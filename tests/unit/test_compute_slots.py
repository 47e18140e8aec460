"""lib/serving/compute_slots.py: at most N at once; a lower priority number goes first, equal
numbers in the order they asked; a computation nobody wants leaves the queue."""
import threading
import time

import pytest

from lib.core import cancellation
from lib.serving import compute_slots
from lib.serving.compute_slots import ComputeSlots


def _until(cond, timeout_s=5.0):
    end = time.monotonic() + timeout_s
    while not cond() and time.monotonic() < end:
        time.sleep(0.001)
    assert cond()


def _queue_up(slots, order, asks):
    """Start one thread per (name, priority), each asking only once the one before waits."""
    threads = []
    for name, priority in asks:
        def work(name=name, priority=priority):
            with slots.hold(priority):
                order.append(name)
        threads.append(threading.Thread(target=work, daemon=True))
        threads[-1].start()
        _until(lambda n=len(threads): slots.waiting() == n)
    return threads


def test_first_figures_first_then_in_order_of_asking():
    slots, order = ComputeSlots(1), []
    held = slots.hold(0)
    held.__enter__()                                   # the one slot is busy
    threads = _queue_up(slots, order, [("third result", 2), ("first result A", 0), ("second", 1),
                                       ("first result B", 0)])
    held.__exit__(None, None, None)
    for t in threads:
        t.join(5)
    assert order == ["first result A", "first result B", "second", "third result"]


def test_never_more_than_n_at_once():
    slots, lock, now, peak = ComputeSlots(2), threading.Lock(), [0], [0]

    def work():
        with slots.hold():
            with lock:
                now[0] += 1
                peak[0] = max(peak[0], now[0])
            time.sleep(0.01)
            with lock:
                now[0] -= 1

    threads = [threading.Thread(target=work, daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert peak[0] == 2 and slots.free == 2


def test_a_computation_nobody_wants_leaves_the_queue():
    slots, wanted, out = ComputeSlots(1), [True], []
    held = slots.hold()
    held.__enter__()

    def stale():
        with cancellation.wanted_while(lambda: wanted[0]):
            try:
                with slots.hold(0):
                    out.append("computed")
            except cancellation.Cancelled:
                out.append("stopped")

    t = threading.Thread(target=stale, daemon=True)
    t.start()
    _until(lambda: slots.waiting() == 1)
    wanted[0] = False
    t.join(5)
    assert out == ["stopped"] and slots.waiting() == 0
    held.__exit__(None, None, None)
    with slots.hold(5):                                # the slot is free for the next one
        assert slots.free == 0
    assert slots.free == 1


def test_at_least_one_slot():
    with pytest.raises(ValueError):
        ComputeSlots(0)


def test_a_long_computation_makes_way_between_steps(monkeypatch):
    from lib.serving import compute_slots
    monkeypatch.setattr(compute_slots, "QUANTUM_S", 0.02)
    slots, order = ComputeSlots(1), []
    started = threading.Event()

    def long():
        with slots.hold(0) as held:
            started.set()
            end = time.monotonic() + 10
            while not order and time.monotonic() < end:  # forward steps of 5 ms until the short one ran
                time.sleep(0.005)
                held.make_way()
        order.append("long")

    def short():
        with slots.hold(0):                              # a first figure: priority 0
            order.append("short")

    threads = [threading.Thread(target=long, daemon=True)]
    threads[0].start()
    started.wait(5)
    time.sleep(0.1)                                      # the long one has held its slot for a while
    threads.append(threading.Thread(target=short, daemon=True))
    threads[1].start()
    for t in threads:
        t.join(10)
    assert order == ["short", "long"] and slots.stepped_aside >= 1 and slots.free == 1


def test_no_making_way_for_an_equal_or_larger_number(monkeypatch):
    from lib.serving import compute_slots
    monkeypatch.setattr(compute_slots, "QUANTUM_S", 60.0)  # never demoted in this test
    slots, order = ComputeSlots(1), []
    with slots.hold(1) as held:
        t = threading.Thread(target=lambda: (slots.hold(1).__enter__(), order.append("other")), daemon=True)
        t.start()
        _until(lambda: slots.waiting() == 1)
        assert held.make_way() is False                  # same number: first come, first served
    t.join(5)
    assert order == ["other"]


def test_who_is_ahead_of_a_measurement(monkeypatch):
    from lib.serving import compute_slots
    monkeypatch.setattr(compute_slots, "QUANTUM_S", 60.0)
    slots = ComputeSlots(2)
    with slots.hold(1) as me:
        assert not slots.ahead_of(me)                    # alone
        with slots.hold(5):
            assert not slots.ahead_of(me)                # a larger number is not ahead
        with slots.hold(0, background=True):
            assert not slots.ahead_of(me)                # background pre-computation never is
        with slots.hold(1):
            assert slots.ahead_of(me)                    # an equal number is (a measurement stops everyone)
    with slots.hold(3) as me, slots.hold(9):
        done = threading.Event()

        def waiter():
            with slots.hold(2):
                pass
            done.set()
        threading.Thread(target=waiter, daemon=True).start()
        _until(lambda: slots.waiting() == 1)
        assert slots.ahead_of(me)                        # a smaller number waiting for a slot
        assert not slots.ahead_of(me, 1)
    assert done.wait(5)


def test_a_holder_that_held_long_is_no_longer_ahead(monkeypatch):
    from lib.serving import compute_slots
    monkeypatch.setattr(compute_slots, "QUANTUM_S", 0.05)
    slots = ComputeSlots(2)
    with slots.hold(2) as me, slots.hold(0):
        assert slots.ahead_of(me, 2)                     # the measurement's number when it asked
        _until(lambda: not slots.ahead_of(me, 2))        # the other's number grows past it


def test_stepping_aside_while_others_go_first():
    slots, order = ComputeSlots(1), []
    with slots.hold(3) as me:
        def first():
            with slots.hold(0):
                order.append("first")
        t = threading.Thread(target=first, daemon=True)
        t.start()
        _until(lambda: slots.waiting() == 1)
        me.step_aside_while(lambda: not order, poll_s=0.01)
        assert order == ["first"] and me.holding         # it waited, then took the slot back
        t.join(5)
    assert slots.free == 1


def test_long_computations_of_one_level_keep_their_order(monkeypatch):
    from lib.serving import compute_slots
    monkeypatch.setattr(compute_slots, "QUANTUM_S", 0.01)
    slots, order = ComputeSlots(1), []
    with slots.hold(0) as first:
        time.sleep(0.1)                                  # held 10 quanta: aged to MAX_AGE, not beyond
        assert first.number(time.monotonic()) == compute_slots.MAX_AGE

        def second():
            with slots.hold(0) as held:
                order.append("second")
                time.sleep(0.2)                          # held longer than the first had
                order.append(held.make_way())            # the first waits, as old as it: no turn-taking
        t = threading.Thread(target=second, daemon=True)
        t.start()
        _until(lambda: slots.waiting() == 1)
        assert first.make_way() is True                  # a younger one goes first ...
        order.append("first")
        time.sleep(0.1)
        assert first.make_way() is False                 # ... but once both are old, first come, first done
    t.join(5)
    assert order == ["second", False, "first"] and slots.free == 1


def test_a_computation_whose_page_draws_a_figure_meanwhile_steps_aside_for_a_blank_page(monkeypatch):
    """A computation asked as a blank page's (level 0) and drew its page's first figure while it
    runs (beam-search's tree so far): it goes on as a page that shows a figure, so at its next
    step it makes way for another blank page's computation, which before the figure it would not."""
    monkeypatch.setattr(compute_slots, "QUANTUM_S", 60.0)          # no ageing: only the figure counts
    slots = compute_slots.ComputeSlots(1)
    drawn, done = [0], threading.Event()

    def blank_page():
        with slots.hold(0):
            done.set()

    with slots.hold(0, run=drawn) as held:
        other = threading.Thread(target=blank_page, daemon=True)
        other.start()
        while not slots.waiting():
            time.sleep(0.005)
        assert held.make_way() is False and not done.is_set()      # equal numbers: it keeps its slot
        drawn[0] += 1                                              # its page's first figure
        assert held.level() == compute_slots.PER_FIGURE
        assert held.make_way() is True and done.is_set()           # the blank page went first
    other.join(5)
