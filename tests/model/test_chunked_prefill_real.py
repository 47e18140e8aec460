"""Chunked prefill on the real model: same logits and K/V as one forward pass."""
import pytest

from lib.concepts.chunked_prefill.chunked_prefill import chunked_vs_oneshot

pytestmark = pytest.mark.real_model


@pytest.mark.parametrize("chunk", [7, 32])
def test_chunked_prefill_equals_one_shot(real_model, gpl_text, chunk):
    ids = real_model.tokenizer(gpl_text[:500])["input_ids"][:80]
    res = chunked_vs_oneshot(real_model.engine, ids, chunk)
    assert res.n_chunks == -(-80 // chunk)
    assert res.max_abs_diff <= 1e-3 and res.cache_diff <= 1e-3 and res.argmax_equal
