"""lib/core/timing.py's readers/writer lock: a measurement runs alone, and model work that asked
during a chain of measurements (a timing sweep) runs between two of them, not after the chain."""
import threading
import time

from lib.core.timing import _ReadersWriter


def _until(cond, timeout_s=5.0):
    end = time.monotonic() + timeout_s
    while not cond() and time.monotonic() < end:
        time.sleep(0.001)
    assert cond()


def _start(fn):
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


def test_a_writer_is_alone_and_readers_share():
    lock, log, inside = _ReadersWriter(), [], {"readers": 0, "writer": 0, "max_readers": 0}
    guard = threading.Lock()

    def reader():
        for _ in range(20):
            with lock.read():
                with guard:
                    inside["readers"] += 1
                    inside["max_readers"] = max(inside["max_readers"], inside["readers"])
                    log.append(("r", inside["writer"]))
                time.sleep(0.001)
                with guard:
                    inside["readers"] -= 1

    def writer():
        for _ in range(10):
            with lock.write():
                with guard:
                    inside["writer"] += 1
                    log.append(("w", inside["readers"]))
                time.sleep(0.002)
                with guard:
                    inside["writer"] -= 1

    threads = [_start(reader) for _ in range(4)] + [_start(writer) for _ in range(2)]
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    assert [e for e in log if e[0] == "w"] and all(n == 0 for kind, n in log)   # nobody beside a writer
    assert inside["max_readers"] > 1                                           # readers did share


def test_work_that_asked_during_a_sweep_runs_before_the_sweeps_next_measurement():
    lock, order = _ReadersWriter(), []
    first_started = threading.Event()

    def sweep():                                  # five measurements, one after another
        for i in range(5):
            with lock.write():
                order.append(f"w{i}")
                first_started.set()
                if i == 0:
                    _until(lambda: lock._waiting)     # the visitor asks during the first one

    def visitor():
        first_started.wait(5)
        with lock.read():
            order.append("r")

    s = _start(sweep)
    v = _start(visitor)
    s.join(5)
    v.join(5)
    assert order.index("r") == 1, order           # between the first and the second measurement


def test_a_reader_arriving_while_a_writer_waits_does_not_overtake_it():
    lock, order = _ReadersWriter(), []
    holding, writer_waiting = threading.Event(), threading.Event()

    def first_reader():
        with lock.read():
            holding.set()
            writer_waiting.wait(5)
            _until(lambda: lock._waiting)           # the late reader is waiting too

    def writer():
        holding.wait(5)
        writer_waiting.set()
        with lock.write():
            order.append("w")

    def late_reader():
        writer_waiting.wait(5)
        _until(lambda: lock._writers_waiting)     # the writer is waiting by now
        with lock.read():
            order.append("r")

    ts = [_start(first_reader), _start(writer), _start(late_reader)]
    for t in ts:
        t.join(5)
    assert order == ["w", "r"]


def test_a_reader_may_measure_and_nest():
    lock, done = _ReadersWriter(), []

    def work():
        with lock.read():
            with lock.write():
                with lock.write():                # nested measurement in the same thread
                    done.append("measured")
            with lock.read():
                done.append("read again")

    t = _start(work)
    t.join(5)
    assert done == ["measured", "read again"]


def test_a_measurement_waits_for_one_step_of_running_work_not_for_all_of_it():
    from lib.core import timing
    order, reading = [], threading.Event()

    def long_work():
        with timing.model_work():
            reading.set()
            end = time.monotonic() + 10
            while not order and time.monotonic() < end:
                time.sleep(0.005)
                timing.make_way_for_measurement()
            order.append("work done")

    def measurement():
        reading.wait(5)
        with timing.exclusive():
            order.append("measured")

    ts = [_start(long_work), _start(measurement)]
    for t in ts:
        t.join(15)
    assert order == ["measured", "work done"]
