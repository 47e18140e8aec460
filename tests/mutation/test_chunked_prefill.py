"""Mutation tests for the chunked-prefill page: realistic bugs planted in the concept's code
(the chunked prefill loop, the scheduler simulation) must turn at least one of the page's
live checks red; without them every check is green.

The chunked loop runs on a tiny random Gemma 3 (the same engine code as the real model). The
real runs' step times are replaced by times derived from hand-made costs, so the timing
checks are deterministic here (the page measures them; tests/model times the real model)."""
import pytest
import torch

from lib.concepts.chunked_prefill import checks, chunked_prefill as cp, real_schedule as rs, scheduler_sim
from lib.concepts.chunked_prefill.chunked_prefill import StepCosts
from lib.model.from_transformers import engine_from_hf
from tests.conftest import tiny_gemma3

pytestmark = pytest.mark.slow  # two full schedules run once per module, then every mutation reruns the checks

COSTS = StepCosts((16, 64, 256), (0.02, 0.06, 0.22), (1, 4, 8), (0.01, 0.013, 0.017), 64)
N, L, CHUNK = 4, 96, 16


def key(_name, **_):
    return _name


@pytest.fixture(scope="module")
def eng():
    torch.set_num_threads(1)
    return engine_from_hf(tiny_gemma3(window=8))


@pytest.fixture(scope="module")
def runs(eng):
    """Real runs on the tiny engine, with every step's time replaced by what the costs say a
    step with that much prompt work takes (independently of the simulator)."""
    out = {}
    for c in (None, CHUNK):
        r = rs.run_schedule(eng, N, L, c, after=1, context=16)
        r.step_s = [COSTS.decode(N) + COSTS.prefill(n) for n in r.prefill_tokens]
        out[c] = r
    return out


def results(eng, runs):
    ids = torch.randint(0, 97, (40,), generator=torch.Generator().manual_seed(0)).tolist()
    cc = cp.chunked_vs_oneshot(eng, ids, CHUNK)
    pn, pc = (rs.predicted_steps(COSTS, N, L, c) for c in (None, CHUNK))
    return {r.name for r in checks.page_checks(cc, runs[None], runs[CHUNK], pn, pc, key) if not r.passed}


def test_all_green_without_a_bug(eng, runs):
    assert results(eng, runs) == set()


def test_every_chunk_starts_at_position_zero(eng, runs, monkeypatch):
    def restart(engine, ids, chunk, cache=None):
        B, T = ids.shape
        cache = cache if cache is not None else engine.new_cache(B, capacity=T + 64)
        for s in range(0, T, chunk):
            pos = torch.arange(0, min(chunk, T - s)).expand(B, -1)        # forgot the offset s
            logits = engine.forward(ids[:, s:s + chunk], cache, positions=pos)
        return logits[:, -1], cache
    monkeypatch.setattr(cp, "prefill_in_chunks", restart)
    assert "check_logits" in results(eng, runs)


def test_chunks_overlap_by_one_token(eng, runs, monkeypatch):
    def overlap(engine, ids, chunk, cache=None):
        B, T = ids.shape
        cache = cache if cache is not None else engine.new_cache(B, capacity=T + 64)
        for s in range(0, T, chunk - 1):                                 # step chunk - 1: a token twice
            e = min(s + chunk, T)
            logits = engine.forward(ids[:, s:e], cache, positions=torch.arange(s, e).expand(B, -1))
        return logits[:, -1], cache
    monkeypatch.setattr(cp, "prefill_in_chunks", overlap)
    assert "check_logits" in results(eng, runs)


def test_simulator_ignores_the_chunk_size(eng, runs, monkeypatch):
    real = scheduler_sim.simulate
    monkeypatch.setattr(scheduler_sim, "simulate", lambda reqs, costs, chunk: real(reqs, costs, None))
    assert "check_sim" in results(eng, runs)


def test_simulator_charges_the_whole_prompt_for_every_chunk(eng, runs, monkeypatch):
    class WholePrompt:                       # the bug: a chunk step costs as much as the whole prompt
        def __init__(self, costs, prompt_len):
            self.costs, self.prompt_len = costs, prompt_len

        def decode(self, batch):
            return self.costs.decode(batch)

        def prefill(self, n_tokens):
            return self.costs.prefill(self.prompt_len) if n_tokens > 0 else 0.0

    real = scheduler_sim.simulate
    monkeypatch.setattr(scheduler_sim, "simulate", lambda reqs, costs, chunk: real(
        reqs, WholePrompt(costs, max(r.prompt_len for r in reqs)), chunk))
    assert "check_sim" in results(eng, runs)
