"""Continuous batching on the real model: sessions at once are batched, and each gets the
tokens it gets alone (greedy and seeded sampling, different prompts and lengths)."""
from concurrent.futures import ThreadPoolExecutor

import pytest

from lib.decoding import batching
from lib.decoding.generate import continuation, generate
from lib.decoding.sampling import SamplingConfig

pytestmark = pytest.mark.real_model

JOBS = [("The capital of France is", SamplingConfig(0.0), 0),
        ("Once upon a time, in a small village by the sea,", SamplingConfig(0.9), 1),
        ("def fibonacci(n):", SamplingConfig(0.7, top_p=0.9), 2),
        ("Ibu kota Indonesia adalah", SamplingConfig(0.0), 3),
        ("To be, or not to be,", SamplingConfig(1.2, top_k=40), 4)]


def test_batched_sessions_equal_their_runs_alone(real_model):
    eng, tok = real_model.engine, real_model.tokenizer
    jobs = [(tuple(tok(text)["input_ids"]), cfg, seed) for text, cfg, seed in JOBS]
    run = lambda j: generate(eng, j[0], j[1], j[2], 8)                     # noqa: E731
    alone = [run(j) for j in jobs]
    sched = batching.scheduler_for(eng)
    steps, rows = sched.steps, sched.rows
    with ThreadPoolExecutor(len(jobs)) as pool:
        together = list(pool.map(run, jobs))
    assert together == alone
    assert sched.rows - rows > 0 and (sched.steps - steps) < (sched.rows - rows), "nothing was batched"


def test_batched_records_match_alone_up_to_rounding(real_model):
    """The probabilities a page shows differ only by float rounding (a matrix product over 5
    rows sums in another order than over 1 row)."""
    eng, tok = real_model.engine, real_model.tokenizer
    jobs = [(tuple(tok(text)["input_ids"]), cfg, seed) for text, cfg, seed in JOBS[:3]]
    run = lambda j: continuation(eng, j[0], j[1], j[2], 4)                 # noqa: E731
    alone = [run(j) for j in jobs]
    with ThreadPoolExecutor(len(jobs)) as pool:
        together = list(pool.map(run, jobs))
    for a, b in zip(alone, together):
        assert [s.token for s in a] == [s.token for s in b]
        assert max(abs(x.model_prob - y.model_prob) for x, y in zip(a, b)) < 1e-4
