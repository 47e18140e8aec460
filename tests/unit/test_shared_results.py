"""lib.serving.memo / result_store: single-flight, byte budget, persistence, code versions."""
import threading
import time
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from lib.serving import memo, result_store
from lib.serving.result_store import Provenance, ResultStore, nbytes
from lib.serving.results import arg_key as _arg_key


@pytest.fixture()
def fresh(tmp_path, monkeypatch):
    monkeypatch.setattr(memo, "MEMORY", memo.Memory(budget=10 * 2**20))
    monkeypatch.setattr(memo, "STORE", ResultStore(tmp_path))
    monkeypatch.setattr(memo, "_inflight", {})
    return tmp_path


calls = {"n": 0}


def slow_square(x, delay=0.3):
    calls["n"] += 1
    time.sleep(delay)
    return np.full(4, x * x)


def boom(x):
    calls["n"] += 1
    time.sleep(0.3)
    raise ValueError(f"bad {x}")


def big(n):
    return torch.zeros(n, dtype=torch.uint8)


def test_identical_work_in_flight_is_computed_once(fresh):
    calls["n"] = 0
    m = memo.Memo(slow_square, _arg_key)
    out = [None] * 8
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, m(3))) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls["n"] == 1
    assert all(o is out[0] for o in out) and out[0].tolist() == [9] * 4


def with_helper(x, _known=None):
    calls["n"] += 1
    return x + 1


def test_an_underscore_argument_is_not_part_of_the_key(fresh):
    """kv-quantization passes its reference run as `_ref` (determined by the other arguments):
    an object whose repr names its address must not make every call, and every server, a miss."""
    calls["n"] = 0
    m = memo.Memo(with_helper, _arg_key)

    class Opaque:                       # repr like <Opaque object at 0x...>: a new one each call
        pass

    assert m(1, _known=Opaque()) == 2 and m(1, _known=Opaque()) == 2 and m(1) == 2
    assert calls["n"] == 1
    assert m(2, _known=Opaque()) == 3 and calls["n"] == 2


def test_an_error_reaches_every_waiter_and_is_not_cached(fresh):
    calls["n"] = 0
    m = memo.Memo(boom, _arg_key)
    errors = []

    def go():
        try:
            m(2)
        except ValueError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=go) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == ["bad 2"] * 5 and calls["n"] == 1
    with pytest.raises(ValueError):
        m(2)
    assert calls["n"] == 2


def test_memory_is_bounded_in_bytes(fresh):
    memo.MEMORY.budget = 3 * 2**20
    m = memo.Memo(big, _arg_key, max_entries=100)
    for i in range(10):
        m(2**20 + i)                      # ~1 MB each
    assert memo.MEMORY.total <= 3 * 2**20
    assert len(memo.MEMORY.items) == 2


def test_results_persist_and_a_new_process_reads_them(fresh, monkeypatch):
    calls["n"] = 0
    m = memo.Memo(slow_square, _arg_key)
    memo.begin_run()
    m(5, delay=0.0)
    assert [u.origin for u in memo.run_provenance()] == ["computed"]
    memo.MEMORY.clear()                   # as after a restart
    memo.begin_run()
    assert m(5, delay=0.0).tolist() == [25] * 4 and calls["n"] == 1
    assert [u.origin for u in memo.run_provenance()] == ["disk"]
    files = list(fresh.rglob("*.pkl"))
    assert len(files) == 1 and "slow_square" in str(files[0])


def test_peek_answers_from_memory_or_disk_and_never_computes(fresh):
    """A page that could slice a larger result asks `peek` first: None while nobody computed
    it (and peek computes nothing), the value once computed, from disk after a restart."""
    calls["n"] = 0
    m = memo.Memo(slow_square, _arg_key)
    assert m.peek(6, delay=0.0) is None and calls["n"] == 0
    first = m(6, delay=0.0)
    assert m.peek(6, delay=0.0) is first and m.peek(7, delay=0.0) is None
    memo.MEMORY.clear()                   # as after a restart
    memo.begin_run()
    assert m.peek(6, delay=0.0).tolist() == [36] * 4 and calls["n"] == 1
    assert [u.origin for u in memo.run_provenance()] == ["disk"]
    assert m(6, delay=0.0).tolist() == [36] * 4 and calls["n"] == 1      # peek put it back in memory


def test_a_damaged_file_is_recomputed(fresh):
    calls["n"] = 0
    m = memo.Memo(slow_square, _arg_key)
    m(6, delay=0.0)
    for f in fresh.rglob("*.pkl"):
        f.write_bytes(b"not a pickle")
    memo.MEMORY.clear()
    assert m(6, delay=0.0).tolist() == [36] * 4 and calls["n"] == 2


def test_code_version_follows_the_imported_sources():
    files = {p.name for p in result_store.module_closure("lib.decoding.generate")}
    assert {"generate.py", "sampling.py", "engine.py"} <= files
    assert not any("ui" in p.parts for p in result_store.module_closure("lib.decoding.generate"))
    assert result_store.code_version("lib.decoding.generate") != result_store.code_version("lib.core.rope")


@dataclass
class Box:
    a: torch.Tensor
    b: np.ndarray
    c: list


def test_sizes_count_tensors_arrays_and_dataclasses_once():
    t = torch.zeros(1000, dtype=torch.float32)
    box = Box(t, np.zeros(500, dtype=np.float64), [t, "x"])
    assert 8000 <= nbytes(box) < 8000 + 2000


def test_dataclass_arguments_are_keyed_by_their_values_not_their_repr():
    a, b = Box(torch.arange(2000.0), np.zeros(1), []), Box(torch.arange(2000.0), np.zeros(1), [])
    b.a[1000] = -1.0                      # differs only where repr() would print "..."
    assert _arg_key(a) != _arg_key(b)
    assert _arg_key(a) == _arg_key(Box(torch.arange(2000.0), np.zeros(1), []))


def test_provenance_caption_says_where_results_came_from():
    from lib.ui.provenance import caption_text

    p = Provenance(0.0, "box", -1, 1.5, 0.7, 2)
    text = caption_text([memo.Used("f", "disk", p), memo.Used("g", "computed", Provenance.now(2.0))], lang="en")
    assert "cache folder" in text and "on box" in text and "computed now" in text and "load" in text


def test_a_function_defined_in_a_page_is_versioned_by_that_page(tmp_path):
    page = tmp_path / "some-page.py"
    page.write_text("from lib.decoding import generate\ndef f(x):\n    return x\n")
    ns = {"__name__": "__main__"}
    exec(compile(page.read_text(), str(page), "exec"), ns)
    v1, name = result_store.fn_version(ns["f"]), result_store.fn_name(ns["f"])
    assert name == "some-page.f"
    page.write_text(page.read_text() + "# edited\n")
    assert result_store.fn_version(ns["f"]) != v1


class _Rerun(BaseException):
    """Stands for Streamlit's RerunException/StopException (BaseException, one session's own)."""


def test_a_waiter_computes_itself_when_the_computing_session_is_rerun(fresh):
    state = {"n": 0}

    def interrupted_once(x):
        state["n"] += 1
        time.sleep(0.3)
        if state["n"] == 1:
            raise _Rerun()
        return x + 1

    m = memo.Memo(interrupted_once, _arg_key)
    got = []

    def first():
        try:
            m(1)
        except _Rerun:
            got.append("rerun")

    t = threading.Thread(target=first)
    t.start()
    time.sleep(0.1)
    got.append(m(1))                      # waits for the first, then computes itself
    t.join()
    assert sorted(map(str, got)) == ["2", "rerun"] and state["n"] == 2


def test_a_memo_writes_to_disk_only_what_its_policy_keeps(fresh):
    """persist_if(provenance) decides: runtime.cached keeps the background visitor's results and
    a visitor's slow ones; a cheap visitor result stays in memory only."""
    from lib.serving import prewarm, results

    kept = memo.Memo(slow_square, _arg_key, persist_if=lambda prov: prov.seconds >= 0.2)
    kept(3, delay=0.0)
    kept(4, delay=0.3)
    names = sorted(str(f) for f in fresh.rglob("*.pkl"))
    assert len(names) == 1
    assert not results.worth_persisting(memo.Provenance.now(0.01))
    assert results.worth_persisting(memo.Provenance.now(results.PERSIST_MIN_S))
    prewarm.mark_background(True)
    try:
        assert results.worth_persisting(memo.Provenance.now(0.01))
    finally:
        prewarm.mark_background(False)
