"""One shared model, several visitors at once: each gets exactly what it would get alone."""
from concurrent.futures import ThreadPoolExecutor

import pytest

from lib.decoding.generate import continuation
from lib.decoding.sampling import SamplingConfig

pytestmark = pytest.mark.real_model

JOBS = [("The capital of France is", 0.0, 0), ("Once upon a time", 0.9, 1),
        ("def fibonacci(n):", 0.7, 2), ("Ibu kota Indonesia adalah", 1.2, 3)]


def run(model, job):
    text, T, seed = job
    ids = tuple(model.tokenizer(text)["input_ids"])
    return [s.token for s in continuation(model.engine, ids, SamplingConfig(T), seed, 8)]


def test_concurrent_sessions_match_sequential(real_model):
    alone = [run(real_model, j) for j in JOBS]
    with ThreadPoolExecutor(len(JOBS)) as pool:
        together = list(pool.map(lambda j: run(real_model, j), JOBS * 2))
    assert together == alone * 2


def test_shared_results_are_computed_once_for_a_class(real_model, tmp_path, monkeypatch):
    """Eight sessions asking runtime.cached for the same continuation at once: one computation,
    the same result for all, equal to the uncached one (lib.serving.memo single-flight)."""
    from lib.serving import memo
    from lib.serving.result_store import ResultStore
    from lib.serving.results import arg_key as _arg_key

    monkeypatch.setattr(memo, "STORE", ResultStore(tmp_path))
    monkeypatch.setattr(memo, "MEMORY", memo.Memory())
    calls = []

    def counted(engine, ids, cfg, seed, n):
        calls.append(1)
        return continuation(engine, ids, cfg, seed, n)

    shared = memo.Memo(counted, _arg_key)
    ids = tuple(real_model.tokenizer("Once upon a time")["input_ids"])
    alone = [s.token for s in continuation(real_model.engine, ids, SamplingConfig(0.9), 1, 8)]
    with ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(lambda _: shared(real_model.engine, ids, SamplingConfig(0.9), 1, 8), range(8)))
    assert len(calls) == 1
    assert all([s.token for s in o] == alone for o in outs)
