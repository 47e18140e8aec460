"""Padding on the real model: masked padded (left and right) and packed outputs equal each
prompt run alone."""
import pytest

from lib.concepts.padding_mask import padding as P

pytestmark = pytest.mark.real_model


def test_real_masked_padding_equals_alone(real_model):
    tok = real_model.tokenizer
    prompts = tuple(tuple(tok(s)["input_ids"]) for s in
                    ("The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village by the sea,"))
    cmp = P.compare_variants(real_model.engine, prompts, tok.pad_token_id or 0)
    for v in cmp.variants:
        if v.mode == "mask":
            assert v.max_hidden_diff < 1e-3 and v.max_logit_diff < 1e-3 and v.top1_changed == 0, v
    assert cmp.packed_logit_diff < 1e-3
    left_nomask = next(v for v in cmp.variants if v.side == "left" and v.mode == "no_mask")
    assert left_nomask.max_hidden_diff > 1e-2
