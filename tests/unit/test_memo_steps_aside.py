"""The memo's slots: a long computation lets a first figure go first between its forward
steps (lib.serving.compute_slots), but never in the middle of a measurement, and the
measurement lock stays consistent while it waits."""
import threading
import time

import pytest

from lib.core import cancellation, timing
from lib.serving import blank_pages, compute_slots, memo as memo_module
from lib.serving.memo import Memo


@pytest.fixture
def one_slot(monkeypatch):
    monkeypatch.setattr(memo_module, "_workers", compute_slots.ComputeSlots(1))
    monkeypatch.setattr(compute_slots, "QUANTUM_S", 0.02)
    was, memo_module.STORE.enabled = memo_module.STORE.enabled, False
    yield
    memo_module.STORE.enabled = was


def _fresh(fn):
    m = Memo(fn, key_of=lambda a: a)
    m.name = f"steps-aside-{fn.__name__}-{time.monotonic_ns()}"
    return m


def _race(long_body):
    order, started = [], threading.Event()

    def long(x):
        started.set()
        long_body()
        order.append("long")
        return x

    def short(x):
        order.append("short")
        return x

    def session(fn):
        memo_module.begin_run()                           # a script run with no results yet
        fn(1)

    a = threading.Thread(target=session, args=(_fresh(long),), daemon=True)
    a.start()
    started.wait(5)
    time.sleep(0.1)
    b = threading.Thread(target=session, args=(_fresh(short),), daemon=True)
    b.start()
    a.join(10)
    b.join(10)
    return order


def _steps():
    """Forward steps until another computation waits for the slot, then ten more."""
    end = time.monotonic() + 10
    slots = memo_module._workers
    while not (slots.waiting() or slots.stepped_aside) and time.monotonic() < end:
        time.sleep(0.005)
        cancellation.checkpoint()                         # the engine's checkpoint before a layer
    for _ in range(10):
        time.sleep(0.005)
        cancellation.checkpoint()


def test_a_first_figure_goes_before_the_rest_of_a_long_computation(one_slot):
    assert _race(_steps) == ["short", "long"]


def test_a_measurement_is_never_interrupted(one_slot):
    def measured():
        with timing.exclusive():
            _steps()
    assert _race(measured) == ["long", "short"]


def test_a_computation_that_made_way_gave_its_model_work_share_up():
    lock, order = timing._ReadersWriter(), []

    def measure():
        with lock.write():
            order.append("measured")

    with lock.read():
        with lock.set_aside():
            t = threading.Thread(target=measure, daemon=True)
            t.start()
            t.join(5)
            assert order == ["measured"]                  # a writer got in while this reader paused
        assert lock._held() == 1 and lock._readers == 1   # the share is back
    assert lock._readers == 0


def test_a_measurement_lets_a_waiting_first_figure_go_first(one_slot):
    def measured():
        end = time.monotonic() + 10
        while not memo_module._workers.waiting() and time.monotonic() < end:
            time.sleep(0.005)                             # until the first figure asks for the slot
        with timing.exclusive():
            pass
    assert _race(measured) == ["short", "long"]
    assert timing._LOCK._readers == 0 and memo_module._workers.free == 1


@pytest.fixture
def two_slots(monkeypatch):
    monkeypatch.setattr(memo_module, "_workers", compute_slots.ComputeSlots(2))
    monkeypatch.setattr(compute_slots, "QUANTUM_S", 60.0)         # the other never ages past it
    was, memo_module.STORE.enabled = memo_module.STORE.enabled, False
    yield
    memo_module.STORE.enabled = was


def _timed_measurement(waited: list):
    """A fresh cached computation whose measurement appends the seconds it waited to start."""
    def measured(x):
        t0 = time.monotonic()
        with timing.exclusive():
            waited.append(time.monotonic() - t0)
        return x

    return _fresh(measured)


def _measurement_waited(same_run: bool) -> float:
    """Seconds a measurement in this thread's script run waited to start while another
    computation of the same level ran, never done: another session's (same_run=False) or this
    run's own started call, which shares its figure count as lib.serving.jobs carries it."""
    stop, holding, waited = threading.Event(), threading.Event(), []

    def other(x):
        holding.set()
        while not stop.is_set():
            time.sleep(0.005)
            cancellation.checkpoint()
        return x

    measured = _timed_measurement(waited)
    memo_module.begin_run()
    drawn = memo_module._run.drawn

    def call():
        if same_run:
            memo_module._run.drawn = drawn
        else:
            memo_module.begin_run()
        _fresh(other)(1)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    holding.wait(5)
    measured(1)
    stop.set()
    t.join(5)
    assert timing._LOCK._readers == 0
    return waited[0]


def test_a_measurement_waits_for_first_figures_at_most_its_patience(two_slots, monkeypatch):
    monkeypatch.setattr(timing, "PATIENCE_S", 0.3)
    assert 0.3 <= _measurement_waited(same_run=False) < 3.0      # it let the other go first, then measured


def test_a_measurement_does_not_wait_for_its_own_pages_started_call(two_slots, monkeypatch):
    """The page's own call is not another session's first figure: the measurement pauses it
    between forward steps instead of waiting its patience for it."""
    monkeypatch.setattr(timing, "PATIENCE_S", 2.0)
    assert _measurement_waited(same_run=True) < 1.0
    assert _measurement_waited(same_run=False) >= 2.0


def _measured_after(others: list) -> float:
    """Seconds a measurement in a new script run of this thread waited to start."""
    waited = []
    memo_module.begin_run()
    _timed_measurement(waited)(len(others))
    assert timing._LOCK._readers == 0
    return waited[0]


def test_a_measurement_waits_for_a_blank_page_that_asks_for_nothing_right_now(two_slots, monkeypatch):
    """Another session's script run is running and its page is blank, but it holds no slot and
    waits for none (between two computations, or before its first): the measurement waits until
    that page draws its first figure, not its whole patience. A blank run that itself waits
    (for a measurement, or for another's result) is not waited for."""
    monkeypatch.setattr(timing, "PATIENCE_S", 5.0)
    drawn = [0]
    with blank_pages.running(drawn):
        first_figure = threading.Timer(0.5, lambda: drawn.__setitem__(0, 1))
        first_figure.start()
        assert 0.4 <= _measured_after([drawn]) < 3.0
    idle = [0]
    with blank_pages.running(idle), blank_pages.waiting(idle):
        assert _measured_after([idle]) < 0.3
    assert blank_pages.others(None) == 0                  # both runs ended: nobody is waited for


def _queued_order(sessions) -> list:
    """Each of `sessions` (a keyword dict: arg, figures drawn, cached results used, started: through
    lib.serving.jobs) asks, one after another, for the only slot while another computation holds
    it; returns the order in which they then computed."""
    from lib.serving import jobs

    order, release = [], threading.Event()

    def blocker(x):
        release.wait(5)
        return x

    def record(x):
        order.append(x)
        return x

    def session(arg, figures=0, results=0, started=False):
        memo_module.begin_run()
        for _ in range(figures):
            memo_module.figure_drawn()
        memo_module._run.used.extend([None] * results)    # cached results it already used
        if started:
            jobs.start(lambda: rec(arg)).results()
        else:
            rec(arg)

    rec = _fresh(record)
    threads = [threading.Thread(target=lambda: (memo_module.begin_run(), _fresh(blocker)(0)), daemon=True)]
    threads[0].start()
    until = time.monotonic() + 5
    while memo_module._workers.free and time.monotonic() < until:
        time.sleep(0.005)
    for kw in sessions:
        threads.append(threading.Thread(target=session, kwargs=kw, daemon=True))
        threads[-1].start()
        until = time.monotonic() + 5
        while memo_module._workers.waiting() < len(threads) - 1 and time.monotonic() < until:
            time.sleep(0.005)
    release.set()
    for t in threads:
        t.join(5)
    return order


def test_a_blank_page_goes_before_one_that_shows_a_figure_whatever_their_results(one_slot, monkeypatch):
    monkeypatch.setattr(compute_slots, "QUANTUM_S", 60.0)
    order = _queued_order([dict(arg="shows a figure", figures=1), dict(arg="blank, ten results", results=10)])
    assert order == ["blank, ten results", "shows a figure"]


def test_a_started_call_queues_behind_a_blank_pages_own_computation(one_slot, monkeypatch):
    """Two blank pages wait for the only slot: page A's call started for later (lib.serving.jobs)
    asked first, page B's own computation after it; B's goes first. A page that shows a figure
    still comes after A's started call."""
    monkeypatch.setattr(compute_slots, "QUANTUM_S", 60.0)
    order = _queued_order([dict(arg="A started", started=True), dict(arg="B own"),
                           dict(arg="C shows a figure", figures=1)])
    assert order == ["B own", "A started", "C shows a figure"]


def test_a_long_first_figure_does_not_step_aside_for_a_page_that_shows_one(one_slot):
    order, started = [], threading.Event()

    def long(x):                                          # a blank page's long computation (a search)
        started.set()
        end = time.monotonic() + 0.6                      # 30 quanta: aged far past one figure's number
        while time.monotonic() < end:
            time.sleep(0.005)
            cancellation.checkpoint()
        order.append("blank page")
        return x

    def short(x):
        order.append("page with a figure")
        return x

    def session(fn, figures):
        memo_module.begin_run()
        for _ in range(figures):
            memo_module.figure_drawn()
        fn(1)

    a = threading.Thread(target=session, args=(_fresh(long), 0), daemon=True)
    a.start()
    started.wait(5)
    time.sleep(0.1)
    b = threading.Thread(target=session, args=(_fresh(short), 1), daemon=True)
    b.start()
    a.join(10)
    b.join(10)
    assert order == ["blank page", "page with a figure"]


def test_a_computation_waiting_for_another_sessions_result_gives_its_slot_up(one_slot):
    """X (a blank page) holds the only slot and needs G, whose computation Y (a page with a
    figure, a larger number) owns but has no slot for: X must give its slot up while it waits."""
    x_holds, y_owns, done = threading.Event(), threading.Event(), []

    def g(v):
        return v * 2

    G = _fresh(g)

    def f(v):
        x_holds.set()
        y_owns.wait(5)
        end = time.monotonic() + 5
        while not memo_module._workers.waiting() and time.monotonic() < end:
            time.sleep(0.005)                             # Y waits for the slot with G's flight
        return G(v)

    def session(fn, figures):
        memo_module.begin_run()
        for _ in range(figures):
            memo_module.figure_drawn()
        done.append(fn(3))

    x = threading.Thread(target=session, args=(_fresh(f), 0), daemon=True)
    x.start()
    x_holds.wait(5)
    real_slot = memo_module._slot

    def slot_after_owning(workers):                       # Y takes G's flight, then asks for a slot
        y_owns.set()
        return real_slot(workers)
    y = threading.Thread(target=lambda: (setattr(memo_module, "_slot", slot_after_owning), session(G, 1)),
                         daemon=True)
    y.start()
    x.join(10)
    y.join(10)
    memo_module._slot = real_slot
    assert sorted(done) == [6, 6] and memo_module._workers.free == 1
    assert timing._LOCK._readers == 0
