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


def test_rank_check_with_ties_and_with_a_planted_reordering(monkeypatch):
    """Equal logits stay tied in id order (identical); a bug that reorders at some T is found,
    and its count is the number of positions whose token differs from the T = 1 order."""
    tied = torch.tensor([1.0, 3.0, 1.0, -2.0, 3.0, -2.0, 0.5])
    assert tm.ranks_identical(tied, [0.05, 0.7, 20.0]) == (True, 0)
    real = tm.apply_temperature
    monkeypatch.setattr(tm, "apply_temperature", lambda x, T: real(x, T) if T <= 1 else real(x, T).abs())
    ok, worst = tm.ranks_identical(tied, [0.5, 2.0])
    flipped = (tm.rank_order(tied, 2.0) != tm.rank_order(tied, 1.0)).sum()
    assert not ok and worst == int(flipped) > 0


def test_entropy_rises_with_temperature_and_is_bounded():
    sw = tm.sweep(LOGITS, np.geomspace(0.05, 50, 30), top_k=3)
    assert tm.is_monotonic_increasing(sw.entropy_bits)
    assert sw.entropy_bits[0] < 0.01 and sw.entropy_bits[-1] == pytest.approx(np.log2(6), abs=0.01)
    assert sw.top1_prob[0] > 0.99


def test_entropy_of_uniform_is_log2_n():
    assert tm.entropy_bits(torch.full((8,), 1 / 8)) == pytest.approx(3.0)


def test_matches_transformers_warper():
    assert tm.max_diff_vs_transformers(LOGITS, [0.3, 1.0, 7.0]) < 1e-7
    # the caller's own probabilities are what is compared: a wrong one shows
    assert tm.diff_vs_transformers(LOGITS, 0.3, tm.temperature_probs(LOGITS, 0.3)) < 1e-7
    assert tm.diff_vs_transformers(LOGITS, 0.3, tm.temperature_probs(LOGITS, 1.0)) > 1e-3


def test_tokens_for_mass():
    p = torch.tensor([0.5, 0.3, 0.15, 0.05])
    assert tm.tokens_for_mass(p, 0.5) == 1
    assert tm.tokens_for_mass(p, 0.9) == 3


@pytest.mark.parametrize("T", [0.05, 0.5, 1.0, 3.0, 50.0])
def test_tokens_for_mass_sorting_only_likely_tokens_counts_as_sorting_all(T):
    """The count when only tokens above a floor are sorted equals the count over the whole
    sorted distribution: peaked (the floor's first guess holds the mass) and nearly flat
    (the floor must drop, down to sorting everything)."""
    g = torch.Generator().manual_seed(int(T * 100))
    p = torch.softmax(torch.randn(262_144, generator=g) * 4 / T, dim=-1)
    everything = int((torch.cumsum(torch.sort(p, descending=True).values, 0) < 0.9).sum()) + 1
    assert tm.tokens_for_mass(p, 0.9) == everything


def test_at_temperatures_states_what_the_distribution_at_each_T_says():
    for a, T in zip(tm.at_temperatures(LOGITS, (0.0, 0.5, 1.0, 3.0)), (0.0, 0.5, 1.0, 3.0)):
        p = tm.temperature_probs(LOGITS, T)
        assert a.temperature == T and a.top_id == int(p.argmax()) == 0
        assert a.top_prob == pytest.approx(float(p.max())) and a.argmax_prob == pytest.approx(float(p[0]))
        assert a.entropy_bits == pytest.approx(tm.entropy_bits(p))
        assert a.tokens_for_90 == tm.tokens_for_mass(p, 0.9)
    assert [a.tokens_for_90 for a in tm.at_temperatures(LOGITS, (0.0, 1.0, 20.0))] == [1, 4, 6]   # 0.56+0.21+0.13 < 0.9
