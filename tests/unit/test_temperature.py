"""Temperature math on hand-built distributions."""
import numpy as np
import pytest
import torch

from lib.concepts.temperature import temperature as tm

LOGITS = torch.tensor([2.0, 1.0, 0.5, -1.0, -3.0, 0.0])


def test_t1_is_the_identity_softmax():
    torch.testing.assert_close(tm.temperature_probs(LOGITS, 1.0), torch.softmax(LOGITS, -1))


def test_t0_is_one_hot_on_the_argmax():
    p = tm.temperature_probs(LOGITS, 0.0)
    assert p.tolist() == [1.0, 0, 0, 0, 0, 0]


def test_order_is_kept_and_input_untouched():
    before = LOGITS.clone()
    ok, worst = tm.ranks_identical(LOGITS, [0.01, 0.5, 2.0, 100.0])
    assert ok and worst == 0
    assert torch.equal(LOGITS, before)


def test_entropy_rises_with_temperature_and_is_bounded():
    sw = tm.sweep(LOGITS, np.geomspace(0.05, 50, 30), top_k=3)
    assert tm.is_monotonic_increasing(sw.entropy_bits)
    assert sw.entropy_bits[0] < 0.01 and sw.entropy_bits[-1] == pytest.approx(np.log2(6), abs=0.01)
    assert sw.top1_prob[0] > 0.99


def test_entropy_of_uniform_is_log2_n():
    assert tm.entropy_bits(torch.full((8,), 1 / 8)) == pytest.approx(3.0)


def test_matches_transformers_warper():
    assert tm.max_diff_vs_transformers(LOGITS, [0.3, 1.0, 7.0]) < 1e-7


def test_tokens_for_mass():
    p = torch.tensor([0.5, 0.3, 0.15, 0.05])
    assert tm.tokens_for_mass(p, 0.5) == 1
    assert tm.tokens_for_mass(p, 0.9) == 3
