"""Mutation tests for the gqa page: realistic bugs planted in the concept's code
(lib.concepts.gqa.gqa) must turn at least one of the page's live checks red; without them every
check is green. Real model, one short prompt, one layer."""
import pytest
import torch

from lib.concepts.gqa import checks, gqa

pytestmark = pytest.mark.real_model
PROMPT = "Alice gave Bob a book because she wanted him to read it."
LAYER = 5


def key(text_key, /, **_):
    return text_key


def page_results(m):
    ids = tuple(m.tokenizer(PROMPT)["input_ids"])
    hm = gqa.head_maps(m.engine, ids, LAYER)
    measured = gqa.measured_cache_bytes(m.engine, ids)
    return checks.page_checks(hm, measured, m.spec.n_heads, m.spec.n_kv_heads, key)


def failed(results):
    return [r.name for r in results if not r.passed]


def test_all_green_without_a_bug(real_model):
    assert failed(page_results(real_model)) == []


def test_grouped_attention_forgets_the_causal_mask(real_model, monkeypatch):
    def unmasked(q, k, v, scale, allowed):
        B, H, T, d = q.shape
        Hkv, S = k.shape[1], k.shape[2]
        G = H // Hkv
        s = ((q.reshape(B, Hkv, G * T, d) @ k.transpose(-1, -2)) * scale).view(B, H, T, S)
        p = torch.softmax(s.float(), dim=-1)
        return (p.view(B, Hkv, G * T, S) @ v).view(B, H, T, d)
    monkeypatch.setattr(gqa, "gqa_attention", unmasked)
    assert "check_equal" in failed(page_results(real_model))


def test_grouped_attention_scales_twice(real_model, monkeypatch):
    real = gqa.gqa_attention
    monkeypatch.setattr(gqa, "gqa_attention", lambda q, k, v, scale, allowed: real(q * scale, k, v, scale, allowed))
    assert "check_equal" in failed(page_results(real_model))


def test_cache_formula_assumes_two_bytes_per_value(real_model, monkeypatch):
    monkeypatch.setattr(gqa, "kv_cache_bytes", lambda L, h, d, T, b=4: 2 * L * h * d * T * 2)
    assert "check_bytes" in failed(page_results(real_model))


def test_cache_formula_counts_keys_only(real_model, monkeypatch):
    monkeypatch.setattr(gqa, "kv_cache_bytes", lambda L, h, d, T, b=4: L * h * d * T * b)
    assert "check_bytes" in failed(page_results(real_model))
