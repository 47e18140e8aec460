"""Mutation tests for the speculative-acceptance page: realistic bugs planted in the rule the
decoder runs (lib.decoding.speculative.acceptance) must turn at least one of the page's live
checks red; without them every check is green. Real model, the page's default settings
(k = 17 of 18 layers, T = 1, 20,000 trials, seed 0), a short prompt and 8 greedy tokens."""
import pytest
import torch

from lib.decoding.speculative import acceptance as S
from lib.decoding.speculative import speculative_decode as D
from lib.reference import speculative_step_fit as step_fit
from lib.decoding.speculative.drafts import early_exit_distributions
from lib.concepts.speculative_acceptance import checks
from lib.decoding.generate import greedy
from lib.decoding.sampling import SamplingConfig

pytestmark = pytest.mark.real_model
PROMPT = "The capital of France is"
K, N, SEED, GAMMA, N_GREEDY = 17, 20_000, 0, 4, 8


def key(text_key, /, **_):
    return text_key


@pytest.fixture(scope="module")
def setup(real_model):
    ids = real_model.tokenizer(PROMPT)["input_ids"]
    p, qs = early_exit_distributions(real_model.engine, ids, SamplingConfig(1.0))
    return real_model, ids, p, qs[K - 1]


def page_results(setup, wrong="target"):
    m, ids, p, q = setup
    spec = D.early_exit_greedy(m.engine, ids, K, GAMMA, N_GREEDY)
    plain = greedy(m.engine, ids, len(spec.new_ids)).new_ids
    inputs = checks.AcceptanceInputs(p, q, S.monte_carlo(p, q, N, SEED, "residual"), S.monte_carlo(p, q, N, SEED, wrong),
                                     spec.new_ids, plain, spec.target_calls, step_fit.step_fits(p, q))
    return checks.page_checks(inputs, key)


def failed(results):
    return [r.name for r in results if not r.passed]


def test_all_green_without_a_bug(setup):
    assert failed(page_results(setup)) == []
    assert failed(page_results(setup, "none")) == []


def test_residual_forgets_to_subtract_q(setup, monkeypatch):
    monkeypatch.setattr(S, "residual", lambda p, q: (p.double() / p.double().sum()).to(p.dtype))
    assert {"check_exact", "check_support"} <= set(failed(page_results(setup)))


def test_ratio_inverted(setup, monkeypatch):
    monkeypatch.setattr(S, "acceptance_ratio", lambda p_x, q_x: torch.clamp(q_x.double() / p_x.double(), max=1.0))
    assert {"check_exact", "check_rate"} & set(failed(page_results(setup)))


def test_accept_only_when_target_prefers_the_token(setup, monkeypatch):
    """A 'greedy-style' shortcut: accept iff p(x) >= q(x), never with probability p/q."""
    monkeypatch.setattr(S, "acceptance_ratio", lambda p_x, q_x: (p_x.double() >= q_x.double()).double())
    assert {"check_exact", "check_rate"} & set(failed(page_results(setup)))


def test_bonus_token_taken_as_the_argmax(setup, monkeypatch):
    """SpeculativeDecoder.step drawing its bonus token (all drafts accepted) as the argmax of
    p instead of a sample: the rule's Monte Carlo cannot see it, the step's own χ² can."""
    from lib.decoding import vocab_max

    monkeypatch.setattr(D, "sample_next", lambda probs, gen, kept_count=None: vocab_max.argmax(probs))
    assert failed(page_results(setup)) == ["check_step_bonus"]


def test_step_keeps_the_draft_token_after_a_rejection(setup, monkeypatch):
    """SpeculativeDecoder.step emitting the rejected draft token instead of the residual's draw."""
    real = D.accept_or_resample

    def keep_draft(p, q, x, gen, correction="residual"):
        v = real(p, q, x, gen, correction)
        return S.Verdict(v.accepted, torch.as_tensor([int(x)]) if not bool(v.accepted[0]) else v.out, v.u, v.ratio)
    monkeypatch.setattr(D, "accept_or_resample", keep_draft)
    assert "check_step_first" in failed(page_results(setup))
