"""RoPE shift on the real model: joint shifts keep scores; re-rotated cached keys equal
recomputed ones; relabelled keys change the prediction."""
import pytest

from lib.concepts.rope_shift import rope_shift as R

pytestmark = pytest.mark.real_model
PROMPT = "Alice gave Bob a book because she wanted him to read it before the exam."


def test_real_rope_shift(real_model):
    ids = tuple(real_model.tokenizer(PROMPT)["input_ids"])
    raw = R.raw_qk(real_model.engine, ids, 5)
    assert R.joint_shift_error(raw, (1, 100, 4096)) < 1e-3
    out = R.shift_outcome(real_model.engine, ids, 100)
    assert out.key_error["rerotated"] <= 5e-4 * out.key_scale
    assert (out.logits["rerotated"] - out.logits["recompute"]).abs().max() < 1e-2
    assert (out.logits["relabelled"] - out.logits["recompute"]).abs().max() > 0.1
