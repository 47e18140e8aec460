"""Mutation tests for the logit-bias page: realistic bugs planted in the bias the page teaches
(lib.decoding.sampling.apply_bias, which run_pipeline calls) must turn at least one of the page's
live checks red; without them every check is green. Real model, page defaults (b = -3, T = 0.5)."""
import pytest

from lib.concepts.logit_bias import checks, logit_bias as lb
from lib.decoding import generate, sampling
from lib.decoding.sampling import SamplingConfig

pytestmark = pytest.mark.real_model
PROMPT, WORDS, B, T, TOP_P = "The capital of France is the city of", ["Paris"], -3.0, 0.5, 0.9


def key(text_key, /, **_):
    return text_key


@pytest.fixture(scope="module")
def setup(real_model):
    ids = tuple(real_model.tokenizer(PROMPT)["input_ids"])
    logits = generate.next_token_logits(real_model.engine, ids)                       # (V,)
    entries = tuple(lb.word_tokens(real_model.tokenizer, WORDS, True))
    probs = lb.first_token_probs(logits, [e.ids[0] for e in entries])
    target = entries[int(probs.argmax())].ids[0]
    biased = {}
    for b in (B, float("-inf")):
        bias, _ = lb.bias_settings(list(entries), b, "first")
        steps = generate.continuation(real_model.engine, ids, SamplingConfig(0.0, bias=bias), 0, 4)
        biased[b] = tuple(generate.generated_ids(steps))
    return logits, entries, target, ids, biased


def failed(setup, b=B):
    logits, entries, target, ids, biased = setup
    inp = checks.check_inputs(logits, entries, b, T, TOP_P, "first", target, ids, biased[b])
    return {r.name for r in checks.page_checks(inp, "Paris", key) if not r.passed}


def test_all_green_without_a_bug(setup):
    assert failed(setup) == set()
    assert failed(setup, float("-inf")) == set()


def test_bias_with_the_wrong_sign(setup, monkeypatch):
    def apply_bias(logits, bias):
        out = logits.clone()
        for tok, b in bias:
            out[..., tok] = out[..., tok] - b
        return out
    monkeypatch.setattr(sampling, "apply_bias", apply_bias)
    assert {"check_odds", "check_hf", "check_chain"} & failed(setup)


def test_bias_on_the_neighbouring_id(setup, monkeypatch):
    def apply_bias(logits, bias):
        out = logits.clone()
        for tok, b in bias:
            out[..., tok + 1] = out[..., tok + 1] + b                   # off by one
        return out
    monkeypatch.setattr(sampling, "apply_bias", apply_bias)
    assert {"check_odds", "check_others", "check_hf"} & failed(setup)


def test_bias_scales_the_logit_instead_of_adding(setup, monkeypatch):
    def apply_bias(logits, bias):
        out = logits.clone()
        for tok, b in bias:
            out[..., tok] = out[..., tok] * abs(b)                     # "multiply the odds" read as the logit
        return out
    monkeypatch.setattr(sampling, "apply_bias", apply_bias)
    assert {"check_odds", "check_hf", "check_chain"} & failed(setup)


def test_ban_built_by_multiplying_a_mask(setup, monkeypatch):
    """apply_bias adds b * one_hot(token) (a bias vector built by multiplying): fine for a finite
    b, but b = -inf times the 0 of every other token is NaN. The default (b = -3, no ban) still
    shows it: its panel also bans the token on the same logits (issue 32 item 4)."""
    import torch

    def apply_bias(logits, bias):
        out = logits.clone()
        for tok, b in bias:
            out = out + b * torch.nn.functional.one_hot(torch.tensor(tok), out.shape[-1]).to(out.dtype)
        return out
    monkeypatch.setattr(sampling, "apply_bias", apply_bias)
    assert "check_odds_ban" in failed(setup)               # b = -3: the page's default state
