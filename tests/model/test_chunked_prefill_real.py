"""Chunked prefill on the real model: same logits and K/V as one forward pass, and the same
tokens for requests decoding while a prompt is prefilled whole or in chunks."""
import pytest

from lib.concepts.chunked_prefill.chunked_prefill import chunked_vs_oneshot
from lib.concepts.chunked_prefill.real_schedule import run_schedule

pytestmark = pytest.mark.real_model


@pytest.mark.parametrize("chunk", [7, 32])
def test_chunked_prefill_equals_one_shot(real_model, gpl_text, chunk):
    ids = real_model.tokenizer(gpl_text[:500])["input_ids"][:80]
    res = chunked_vs_oneshot(real_model.engine, ids, chunk)
    assert res.n_chunks == -(-80 // chunk)
    assert res.max_abs_diff <= 1e-3 and res.cache_diff <= 1e-3 and res.argmax_equal


def test_real_schedule_same_tokens_with_and_without_chunks(real_model):
    naive = run_schedule(real_model.engine, 2, 48, None, before=1, after=1, context=16)
    chunked = run_schedule(real_model.engine, 2, 48, 16, before=1, after=1, context=16)
    assert naive.prefill_tokens == [0, 48, 0] and chunked.prefill_tokens == [0, 16, 16, 16, 0]
    assert naive.running_tokens == chunked.running_tokens[:3]
    assert naive.first_token == chunked.first_token
    assert all(s > 0 for s in naive.step_s + chunked.step_s)
