"""Mutation tests for the attention-scaling page: realistic bugs planted in the concept's code
(lib.concepts.attention_scaling.attention_scaling) must turn at least one of the page's live
checks red; without them every check is green. Real model, one short prompt, one layer, the
page's default chosen scale (1, i.e. 16 x the model's 1/16)."""
import pytest
import torch

from lib.concepts.attention_scaling import attention_scaling as A
from lib.concepts.attention_scaling import checks

pytestmark = pytest.mark.real_model
PROMPT = "Alice gave Bob a book because she wanted him to read it."
LAYER, FACTOR = 3, 16.0
DIMS = (4, 16, 64, 256, 1024)


def key(text_key, /, **_):
    return text_key


def page_results(m):
    ids = tuple(m.tokenizer(PROMPT)["input_ids"])
    at_model = A.layer_scores(m.engine, ids, LAYER)
    at_chosen = A.layer_scores(m.engine, ids, LAYER, FACTOR)
    return checks.page_checks(A.random_dot_variance(DIMS, 20_000, 0), at_model, at_chosen, key)


def failed(results):
    return [r.name for r in results if not r.passed]


def test_all_green_without_a_bug(real_model):
    assert failed(page_results(real_model)) == []


def test_rescale_hook_divides_instead_of_multiplying(real_model, monkeypatch):
    def divide(factor):
        def hook(layer, scores):
            masked = scores == torch.finfo(scores.dtype).min
            return torch.where(masked, scores, scores / factor)
        return hook
    monkeypatch.setattr(A, "rescale_hook", divide)
    assert "check_engine" in failed(page_results(real_model))


def test_softmax_over_the_query_axis(real_model, monkeypatch):
    def wrong_axis(dots, scale):
        x = torch.where(torch.isinf(dots), dots, dots * float(scale))
        return torch.softmax(x, dim=-2)
    monkeypatch.setattr(A, "scaled_probs", wrong_axis)
    assert {"check_engine", "check_entropy"} & set(failed(page_results(real_model)))


def test_entropy_in_nats(real_model, monkeypatch):
    def nats(probs):
        p = probs.double()
        return -(p * torch.where(p > 0, torch.log(p), torch.zeros_like(p))).sum(-1)
    monkeypatch.setattr(A, "row_entropy_bits", nats)
    assert "check_entropy" in failed(page_results(real_model))


def test_dot_product_averaged_instead_of_summed(real_model, monkeypatch):
    real = A.random_dot_variance

    def mean_dots(dims, n_samples=20_000, seed=0):
        dv = real(dims, n_samples, seed)
        d = dv.dims.astype(float)
        return A.DotVariance(dv.dims, dv.var_raw / d ** 2, dv.var_scaled / d ** 2, dv.n_samples)
    monkeypatch.setattr(A, "random_dot_variance", mean_dots)
    assert "check_var" in failed(page_results(real_model))
