"""Mutation tests for the stable-softmax page: realistic bugs planted in the concept's code
(lib.concepts.stable_softmax.stable_softmax) must turn at least one of the page's live checks red;
without them every check is green. Real logits of one short prompt, page defaults (fp16, s = 1, c = 0)."""
import math

import pytest
import torch

from lib.concepts.stable_softmax import checks, stable_softmax as ss
from lib.decoding import generate

pytestmark = pytest.mark.real_model
OFFSETS = (-150.0, -40.0, -20.0, 0.0, 20.0, 69.0, 150.0)


def key(text_key, /, **_):
    return text_key


@pytest.fixture(scope="module")
def logits(real_model):
    return generate.next_token_logits(real_model.engine, real_model.tokenizer("The capital of France is")["input_ids"])


def failed(logits, dtype="fp16", scale=1.0, offset=0.0):
    reports = {name: ss.report(logits, scale, offset, name) for name in ss.DTYPES}
    sweep = ss.offset_sweep(logits, scale, OFFSETS)
    shift = ss.shift_report(logits, scale, offset, dtype)
    return {r.name for r in checks.page_checks(reports, dtype, sweep, shift, key) if not r.passed}


@pytest.mark.parametrize("dtype", list(ss.DTYPES))
def test_all_green_without_a_bug(logits, dtype):
    assert failed(logits, dtype) == set()


def test_stable_form_subtracts_the_minimum(logits, monkeypatch):
    def stable(z):
        e = torch.exp(z - z.min())
        return (e.float() / e.float().sum()).to(z.dtype)
    monkeypatch.setattr(ss, "stable_softmax", stable)
    assert {"check_torch", "check_stable", "check_shift"} & failed(logits)


def test_underflow_threshold_ignores_subnormals(logits, monkeypatch):
    monkeypatch.setattr(ss, "underflow_threshold", lambda dt: math.log(torch.finfo(dt).smallest_normal))
    assert {"check_inf", "check_status"} & failed(logits)


def test_logsumexp_forgets_to_add_the_maximum_back(logits, monkeypatch):
    monkeypatch.setattr(ss, "stable_logsumexp", lambda z: float(torch.log(torch.exp(z - z.max()).float().sum())))
    assert "check_lse" in failed(logits)
