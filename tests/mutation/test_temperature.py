"""Mutation tests for the temperature page: realistic bugs planted in the concept's code
(lib.concepts.temperature.temperature) must turn at least one of the page's live checks red;
without them every check is green. Real model, one short prompt."""
import pytest
import torch

from lib.concepts.temperature import checks, temperature as tm
from lib.decoding import generate
from lib.decoding.sampling import SamplingConfig

pytestmark = pytest.mark.real_model
PROMPT = "The capital of France is"
TEMPS = (0.5, 1.0, 2.0)


def key(text_key, /, **_):
    return text_key


@pytest.fixture(scope="module")
def run(real_model):
    ids = real_model.tokenizer(PROMPT)["input_ids"]
    logits = generate.next_token_logits(real_model.engine, ids)                     # (V,)
    steps = generate.continuation(real_model.engine, ids, SamplingConfig(0.0), 0, 4, real_model.spec.eos_ids)
    greedy = tuple(s.token for s in steps)
    return logits, greedy, generate.argmax_mismatches(real_model.engine, ids, greedy)


def page_results(run):
    logits, greedy, bad = run
    return checks.page_checks(checks.check_inputs(logits, TEMPS), greedy, bad, key)


def failed(results):
    return [r.name for r in results if not r.passed]


def test_all_green_without_a_bug(run):
    assert failed(page_results(run)) == []


def test_temperature_multiplied_instead_of_divided(run, monkeypatch):
    monkeypatch.setattr(tm, "apply_temperature", lambda x, T: x * T)
    assert {"check_hf", "check_entropy"} & set(failed(page_results(run)))


def test_entropy_in_nats_not_bits(run, monkeypatch):
    def nats(probs, log_probs=None):
        p = probs.double()
        nz = p[p > 0]
        return float(-(nz * torch.log(nz)).sum())
    monkeypatch.setattr(tm, "entropy_bits", nats)
    assert "check_entropy" in failed(page_results(run))


def test_t0_treated_as_t1(run, monkeypatch):
    real = tm.temperature_probs
    monkeypatch.setattr(tm, "temperature_probs", lambda x, T: real(x, 1.0) if T == 0 else real(x, T))
    assert "check_greedy" in failed(page_results(run))


def test_temperature_added_as_an_offset(run, monkeypatch):
    """logits - T: softmax is shift-invariant, so every T gives the T = 1 distribution."""
    monkeypatch.setattr(tm, "apply_temperature", lambda x, T: x - T)
    assert {"check_hf", "check_entropy"} & set(failed(page_results(run)))


def test_sample_next_scores_p_over_u(run, monkeypatch):
    """sample_next's race scoring p / u instead of p / e, e = -ln u (favours likely tokens):
    the χ² of its draws at the page's T turns red."""
    from lib.decoding import sampling

    monkeypatch.setattr(sampling, "race_scores",
                        lambda p, g: p / torch.rand(p.shape, dtype=torch.float64, generator=g))
    assert failed(page_results(run)) == ["check_draws"]
