"""GQA on the real model: 4 query heads over 1 K/V head equal MHA with the K/V repeated."""
import pytest

from lib.concepts.gqa import gqa

pytestmark = pytest.mark.real_model


def test_real_gqa_equals_mha_and_cache_bytes(real_model):
    spec = real_model.spec
    assert (spec.n_heads, spec.n_kv_heads) == (4, 1)
    ids = tuple(real_model.tokenizer("Alice gave Bob a book because she wanted him to read it.")["input_ids"])
    hm = gqa.head_maps(real_model.engine, ids, 5)
    assert hm.gqa_vs_mha_exact and hm.engine_diff <= 1e-6 and hm.hf_diff <= 1e-6
    check = gqa.measured_cache_bytes(real_model.engine, ids)
    assert all(formula == real for _, _, formula, real in check.rows)
    assert check.rows[0][3] == 4 * check.rows[-1][3]
