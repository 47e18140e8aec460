"""Grouped-query attention: equals MHA with repeated K/V; cache bytes formula = tensor bytes."""
import torch

from lib.concepts.gqa import gqa
from lib.core.layer import attention_mask
from lib.model.from_transformers import engine_from_hf
from tests.conftest import tiny_gemma3, tiny_llama


def _qkv(H=8, Hkv=2, T=9, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, H, T, d, generator=g), torch.randn(2, Hkv, T, d, generator=g),
            torch.randn(2, Hkv, T, d, generator=g))


def test_gqa_equals_mha_with_repeated_kv_exactly():
    q, k, v = _qkv()
    pos = torch.arange(9).expand(2, 9)
    allowed = attention_mask(pos, pos, None)
    a = gqa.gqa_attention(q, k, v, 0.25, allowed)
    b = gqa.mha_attention(q, gqa.repeat_kv(k, 4), gqa.repeat_kv(v, 4), 0.25, allowed)
    assert torch.equal(a, b)


def test_repeat_kv_matches_transformers():
    from transformers.models.llama.modeling_llama import repeat_kv

    _, k, _ = _qkv()
    assert torch.equal(gqa.repeat_kv(k, 4), repeat_kv(k, 4))


def test_heads_of_a_group_differ_but_share_keys():
    q, k, v = _qkv()
    pos = torch.arange(9).expand(2, 9)
    allowed = attention_mask(pos, pos, None)
    out = gqa.gqa_attention(q, k, v, 0.25, allowed)
    assert not torch.allclose(out[:, 0], out[:, 1])        # same K/V head, different queries


def test_head_maps_on_tiny_models_equal_the_engine():
    for hf in (tiny_gemma3(), tiny_llama("llama")):
        eng = engine_from_hf(hf)
        hm = gqa.head_maps(eng, tuple(range(3, 15)), 1)
        assert hm.gqa_vs_mha_exact and hm.engine_diff <= 1e-6 and hm.hf_diff <= 1e-6
        G = eng.spec.group_size
        assert hm.head_to_kv == [h // G for h in range(eng.spec.n_heads)]


def test_layouts_and_cache_bytes():
    names = [(lay.name, lay.n_kv_heads) for lay in gqa.kv_layouts(4, 1)]
    assert names == [("MHA", 4), ("GQA-2", 2), ("MQA", 1)]
    assert gqa.kv_cache_bytes(18, 1, 256, 1000, 2) == 2 * 18 * 256 * 1000 * 2
    hf = tiny_gemma3()
    eng = engine_from_hf(hf)
    check = gqa.measured_cache_bytes(eng, tuple(range(1, 20)))
    assert check.tokens == 19
    for name, n_kv, formula, real in check.rows:
        assert formula == real, name
    assert check.rows[0][3] == 4 * check.rows[-1][3]


def test_gqa_attention_matches_transformers_eager_with_two_kv_heads():
    """Hkv = 2, G = 4: the grouping (head h reads KV head h // G) against transformers' repeat_kv."""
    from lib.reference.attention_reference import eager_attention

    q, k, v = _qkv()
    pos = torch.arange(9).expand(2, 9)
    allowed = attention_mask(pos, pos, 4)
    ours = gqa.gqa_attention(q, k, v, 0.25, allowed)
    theirs, _ = eager_attention(q, k, v, 0.25, allowed)
    torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=0)


def test_allocated_bytes_count_storage_not_views():
    from lib.core.cache.dense import KVCache

    c = KVCache(2, 1, 1, 8, torch.float32, "cpu", capacity=10)
    for l in range(2):
        c.append(l, torch.zeros(1, 1, 3, 8), torch.zeros(1, 1, 3, 8), torch.arange(3)[None])
    assert c.nbytes() == 2 * 2 * 3 * 8 * 4                 # the live views
    assert gqa.allocated_kv_bytes(c) == 2 * 2 * 10 * 8 * 4  # what was allocated (capacity 10)


def test_page_checks_pass_on_a_tiny_model_and_fail_on_wrong_bytes(monkeypatch):
    from lib.concepts.gqa import checks

    hf = tiny_gemma3()
    eng = engine_from_hf(hf)
    ids = tuple(range(1, 20))
    hm, cb = gqa.head_maps(eng, ids, 1), gqa.measured_cache_bytes(eng, ids)
    stub = lambda key, **fmt: key
    res = checks.page_checks(hm, cb, eng.spec.n_heads, eng.spec.n_kv_heads, stub)
    assert all(r.passed for r in res), res
    monkeypatch.setattr(gqa, "kv_cache_bytes", lambda L, h, d, T, b=4: 2 * L * h * d * T * 2)
    bad = checks.page_checks(hm, gqa.measured_cache_bytes(eng, ids), eng.spec.n_heads, eng.spec.n_kv_heads, stub)
    assert not all(r.passed for r in bad)
