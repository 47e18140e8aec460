"""Attention logit scaling: the variance argument, order and entropy under scaling, and the
re-scaled forward against transformers (tiny random Gemma 3)."""
import numpy as np
import pytest
import torch

from lib.concepts.attention_scaling import attention_scaling as A
from lib.model.from_transformers import engine_from_hf
from tests.conftest import tiny_gemma3


def test_random_dot_product_variance_is_d():
    dv = A.random_dot_variance((4, 16, 64, 256), n_samples=20_000, seed=0)
    np.testing.assert_allclose(dv.var_raw / dv.dims, 1.0, rtol=0.05)
    np.testing.assert_allclose(dv.var_scaled, 1.0, rtol=0.05)


def _masked_dots(seed=0, T=7):
    g = torch.Generator().manual_seed(seed)
    dots = torch.randn(3, T, T, generator=g, dtype=torch.float64) * 10
    allowed = torch.ones(T, T, dtype=torch.bool).tril().expand(3, T, T)
    return dots.masked_fill(~allowed, float("-inf")), allowed


def test_scaling_keeps_every_row_order():
    dots, _ = _masked_dots()
    for s in (1e-3, 0.0625, 1.0, 7.0, 300.0):
        assert A.order_inversions(dots, A.scaled_probs(dots, s), s) == 0


def test_order_check_detects_a_real_change():
    dots, _ = _masked_dots()
    assert A.order_inversions(dots, A.scaled_probs(dots, -1.0), 1.0) > 0   # a negative scale reverses rows
    probs = A.scaled_probs(dots, 0.1)
    row = probs[0, 3].clone()
    i, j = int(row[:4].argmax()), int(row[:4].argmin())
    probs[0, 3, i], probs[0, 3, j] = row[j], row[i]                       # swap two keys of one row
    assert A.order_inversions(dots, probs, 0.1) > 0


def test_entropy_never_rises_and_limits():
    dots, allowed = _masked_dots(1)
    ok, rise = A.entropy_never_rises(dots, (0.0, 0.01, 0.1, 1.0, 10.0, 100.0))
    assert ok and rise <= 1e-9
    uniform = A.scaled_probs(dots, 0.0)                    # scale 0: uniform over visible keys
    n_visible = allowed.sum(-1, keepdim=True).double()
    torch.testing.assert_close(uniform, allowed.double() / n_visible)
    sharp = A.scaled_probs(dots, 1e4)                      # huge scale: one-hot on the row max
    assert torch.all(sharp.max(-1).values > 0.999)


def test_rescale_hook_keeps_mask():
    s = torch.tensor([[1.0, 2.0, torch.finfo(torch.float32).min]])
    out = A.rescale_hook(0.0)(0, s)
    assert out[0, 0] == 0 and out[0, 1] == 0 and out[0, 2] == torch.finfo(torch.float32).min


@pytest.mark.parametrize("factor", [0.25, 1.0, 4.0])
def test_rescaled_forward_matches_transformers_with_another_scale(factor):
    hf = tiny_gemma3()
    eng = engine_from_hf(hf)
    ids = torch.randint(0, 97, (1, 12), generator=torch.Generator().manual_seed(3))
    ours = A.next_token_probs_with_scale(eng, tuple(ids[0].tolist()), factor)
    for layer in hf.model.layers:
        layer.self_attn.scaling = hf.config.query_pre_attn_scalar ** -0.5 * factor
    with torch.no_grad():
        theirs = torch.softmax(hf(ids).logits[0, -1], -1)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)


def test_layer_scores_match_engine_on_tiny_model():
    hf = tiny_gemma3()
    eng = engine_from_hf(hf)
    ls = A.layer_scores(eng, tuple(range(1, 11)), 2)
    diff = (ls.dots * ls.model_scale - ls.engine_scores.double())[ls.allowed].abs().max()
    assert diff < 1e-4
    torch.testing.assert_close(A.scaled_probs(ls.dots, ls.model_scale).float(), ls.engine_probs, atol=1e-5, rtol=0)
    hot = A.layer_scores(eng, tuple(range(1, 11)), 2, factor=4.0)           # the engine run at 4x the scale
    assert hot.model_scale == pytest.approx(4 * ls.model_scale)
    torch.testing.assert_close(A.scaled_probs(hot.dots, hot.model_scale).float(), hot.engine_probs, atol=1e-5, rtol=0)
    assert A.order_inversions(hot.dots, hot.engine_probs, hot.model_scale) == 0
