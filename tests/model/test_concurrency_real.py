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
