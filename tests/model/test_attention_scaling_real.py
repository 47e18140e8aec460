"""Attention scaling on the real Gemma 3 270M: our recomputed scores are the engine's, scaling
keeps row order, and running the model at another scale moves the next-token distribution."""
import numpy as np
import pytest

from lib.concepts.attention_scaling import attention_scaling as A

pytestmark = pytest.mark.real_model
PROMPT = "Alice gave Bob a book because she wanted him to read it before the exam."


def test_real_scores_order_and_scale(real_model):
    ids = tuple(real_model.tokenizer(PROMPT)["input_ids"])
    assert real_model.spec.attn_scale == pytest.approx(1 / 16)           # query_pre_attn_scalar 256
    ls = A.layer_scores(real_model.engine, ids, 3)
    diff = (ls.dots * ls.model_scale - ls.engine_scores.double())[ls.allowed].abs().max()
    assert diff < 1e-4
    assert A.order_inversions(ls.dots, ls.engine_probs, ls.model_scale) == 0
    for s in (2.0 ** -10, 0.0625, 1.0, 16.0):
        assert A.order_inversions(ls.dots, A.scaled_probs(ls.dots, s), s) == 0
    hot = A.layer_scores(real_model.engine, ids, 3, factor=16.0)             # the engine at scale 1
    assert A.order_inversions(hot.dots, hot.engine_probs, hot.model_scale) == 0
    assert float((A.scaled_probs(hot.dots, 1.0).float() - hot.engine_probs).abs().max()) < 1e-5
    ok, _ = A.entropy_never_rises(ls.dots, (0.0, 1 / 64, 1 / 16, 1 / 4, 1.0))
    assert ok
    # without the 1/16 the rows of this head are (almost) one-hot
    assert A.scale_sweep(ls.dots[0], ls.allowed[0], (1.0,)).mean_max[0] > 0.95
    sw = A.model_scale_sweep(real_model.engine, ids, (1.0, 16.0))
    assert sw.kl_from_model[0] == pytest.approx(0.0, abs=1e-9)
    assert sw.kl_from_model[1] > 0.1
    assert np.isfinite(sw.entropy_bits).all()
