"""The sampling pipeline on hand-built 4-10-token distributions (transformers-style tests)."""
import math

import pytest
import torch

from lib.decoding import sampling as s
from lib.reference import sampling_reference as ref

# probabilities 0.5, 0.2, 0.15, 0.1, 0.05 (as logits), in a shuffled order
PROBS = torch.tensor([0.1, 0.5, 0.05, 0.2, 0.15])
LOGITS = PROBS.log()
INF = float("-inf")


def kept(mask):
    return sorted(torch.nonzero(mask).flatten().tolist())


def test_top_k_keeps_exactly_k_and_ties():
    assert kept(s.top_k_mask(LOGITS, 2)) == [1, 3]
    assert kept(s.top_k_mask(LOGITS, 99)) == [0, 1, 2, 3, 4]
    tied = torch.tensor([3.0, 1.0, 1.0, 0.0])
    assert kept(s.top_k_mask(tied, 2)) == [0, 1, 2]      # both tokens tied at the 2nd value stay


@pytest.mark.parametrize("p,expected", [(0.3, [1]), (0.5, [1]), (0.51, [1, 3]), (0.7, [1, 3]),
                                        (0.71, [1, 3, 4]), (0.9, [0, 1, 3, 4]), (1.0, [0, 1, 2, 3, 4])])
def test_top_p_keeps_the_smallest_set_reaching_p(p, expected):
    assert kept(s.top_p_mask(LOGITS, p)) == expected


def test_top_p_after_top_k_equals_the_full_computation():
    g = torch.Generator().manual_seed(5)
    for _ in range(20):
        x = torch.randn(40, generator=g) * 3
        kept = s.keep_only(x, s.top_k_mask(x, 6))                 # 6 finite of 40: the subset path
        assert ref.top_p_mismatches(kept, [0.2, 0.5, 0.9, 0.99, 1.0]) == 0


def test_top_p_keeps_the_top_token_even_for_tiny_p():
    assert kept(s.top_p_mask(LOGITS, 1e-9)) == [1]


def test_min_p_is_relative_to_the_top_probability():
    assert kept(s.min_p_mask(LOGITS, 0.25)) == [1, 3, 4]     # p >= 0.125
    assert kept(s.min_p_mask(LOGITS, 0.35)) == [1, 3]        # p >= 0.175
    assert kept(s.min_p_mask(LOGITS, 0.0)) == [0, 1, 2, 3, 4]


def test_masks_equal_transformers_on_small_distributions():
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        x = torch.randn(10, generator=g) * 3
        assert ref.top_k_mismatches(x, range(1, 11)) == 0
        assert ref.top_p_mismatches(x, [0.05, 0.3, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0]) == 0
        assert ref.min_p_mismatches(x, [0.0, 0.05, 0.1, 0.5, 1.0]) == 0


def test_bias_adds_to_one_token_and_inf_bans():
    out = s.apply_bias(LOGITS, [(1, 2.0), (2, INF)])
    assert out[1] == LOGITS[1] + 2.0 and out[2] == INF
    assert torch.equal(out[[0, 3, 4]], LOGITS[[0, 3, 4]])


def test_sequence_bias_applies_only_when_the_context_matches():
    seqs = (((7,), -1.0), ((3, 4), 5.0))
    assert s.sequence_bias_pairs(seqs, (1, 2, 3)) == [(7, -1.0), (4, 5.0)]
    assert s.sequence_bias_pairs(seqs, (1, 3, 2)) == [(7, -1.0)]
    assert s.sequence_bias_pairs(seqs, ()) == [(7, -1.0)]
    x = torch.zeros(10)
    assert ref.sequence_bias_max_diff(x, seqs, (1, 2, 3)) == 0.0
    assert ref.sequence_bias_max_diff(x, (((2,), INF), ((5, 6, 9), -3.0)), (5, 6)) == 0.0


def test_inputs_are_never_modified_in_place():
    x = torch.randn(8, generator=torch.Generator().manual_seed(1))
    before = x.clone()
    s.apply_bias(x, [(0, 5.0)])
    s.apply_temperature(x, 0.5)
    s.apply_temperature(x, 0.0)
    s.top_k_mask(x, 3)
    s.top_p_mask(x, 0.5)
    s.min_p_mask(x, 0.2)
    s.apply_sequence_bias(x, (((1, 2), 1.0),), (1,))
    s.run_pipeline(x, s.SamplingConfig(0.7, top_k=4, top_p=0.8, min_p=0.1, bias=((2, -5.0),)))
    assert torch.equal(x, before)


def test_pipeline_records_every_active_stage_in_order():
    cfg = s.SamplingConfig(0.5, top_k=3, top_p=0.9, bias=((4, 1.0),))
    res = s.run_pipeline(LOGITS, cfg)
    assert [r.name for r in res.stages] == ["input", "bias", "temperature", "top_k", "top_p"]
    assert res.kept_count == int((res.probs > 0).sum()) <= 3
    assert res.probs.sum().item() == pytest.approx(1.0, abs=1e-6)
    assert res.stage("top_k").kept.sum() == 3


def test_order_matters_temperature_before_or_after_top_p():
    standard = s.SamplingConfig(3.0, top_p=0.7)
    late_t = s.SamplingConfig(3.0, top_p=0.7, order=("bias", "top_k", "top_p", "temperature", "min_p"))
    assert s.run_pipeline(LOGITS, standard).kept_count > s.run_pipeline(LOGITS, late_t).kept_count == 2


def test_greedy_is_one_hot_on_the_argmax():
    res = s.run_pipeline(LOGITS, s.SamplingConfig(0.0))
    assert res.probs.tolist() == [0, 1, 0, 0, 0]
    assert s.sample_next(res.probs, None) == 1


def test_ban_moves_greedy_to_the_next_token():
    res = s.run_pipeline(LOGITS, s.SamplingConfig(0.0, bias=((1, INF),)))
    assert s.sample_next(res.probs, None) == 3


def test_removing_everything_raises_a_clear_error():
    cfg = s.SamplingConfig(1.0, top_k=1, bias=((1, INF),), order=("temperature", "top_k", "bias", "top_p", "min_p"))
    with pytest.raises(s.EmptyDistribution, match="nothing left"):
        s.run_pipeline(LOGITS, cfg)


def test_biased_token_outside_vocabulary_is_rejected():
    with pytest.raises(s.InvalidSamplingParameter, match="outside the vocabulary"):
        s.run_pipeline(LOGITS, s.SamplingConfig(1.0, bias=((99, 1.0),)))


def test_fixed_seed_sampling_is_reproducible():
    p = torch.softmax(torch.randn(10, generator=torch.Generator().manual_seed(3)), -1)
    draw = lambda seed: [s.sample_next(p, g) for g in [torch.Generator().manual_seed(seed)] for _ in range(50)]
    assert draw(7) == draw(7)
    assert draw(7) != draw(8)


def test_sampling_follows_the_distribution():
    p = torch.tensor([0.6, 0.3, 0.1, 0.0])
    g = torch.Generator().manual_seed(0)
    counts = torch.bincount(torch.tensor([s.sample_next(p, g) for _ in range(4000)]), minlength=4)
    assert counts[3] == 0
    assert abs(counts[0] / 4000 - 0.6) < 0.03 and abs(counts[2] / 4000 - 0.1) < 0.02


@pytest.mark.parametrize("kwargs,word", [
    (dict(temperature=-0.1), "temperature"), (dict(temperature=math.nan), "temperature"),
    (dict(temperature=math.inf), "temperature"), (dict(top_k=0), "top_k"), (dict(top_k=2.5), "top_k"),
    (dict(top_k=math.nan), "top_k"), (dict(top_p=0.0), "top_p"), (dict(top_p=1.01), "top_p"),
    (dict(top_p=math.nan), "top_p"), (dict(min_p=-0.1), "min_p"), (dict(min_p=math.nan), "min_p"),
    (dict(bias=((1, math.nan),)), "bias"), (dict(bias=((1, math.inf),)), "bias"),
    (dict(bias=((-1, 1.0),)), "token ids"), (dict(sequence_bias=(((), 1.0),)), "at least one"),
    (dict(order=("bias", "top_k")), "order")])
def test_invalid_parameters_raise_a_clear_error(kwargs, word):
    with pytest.raises(s.InvalidSamplingParameter, match=word):
        s.SamplingConfig(**kwargs)


def test_sample_next_draws_each_token_with_its_probability_and_never_a_removed_one():
    """20,000 draws from a distribution with removed (p = 0) tokens at both ends and inside:
    every frequency within 5 standard deviations of its probability, no removed token drawn,
    and the same seed gives the same draws."""
    from lib.decoding.sampling import sample_next

    probs = torch.tensor([0.0, 0.5, 0.0, 0.2, 0.25, 0.0, 0.05, 0.0])
    gen = torch.Generator().manual_seed(7)
    draws = torch.tensor([sample_next(probs, gen) for _ in range(20_000)])
    counts = torch.bincount(draws, minlength=len(probs)).double()
    n = counts.sum()
    assert counts[probs == 0].sum() == 0
    sd = torch.sqrt(n * probs.double() * (1 - probs.double()))
    assert bool(((counts - n * probs.double()).abs() <= 5 * sd + 1e-9).all()), counts.tolist()
    again = torch.Generator().manual_seed(7)
    assert [sample_next(probs, again) for _ in range(50)] == draws[:50].tolist()


def test_nan_anywhere_is_found_and_anything_finite_counts_as_left():
    """run_pipeline finds NaN with one max (which propagates it), wherever it is; 'nothing
    left' is only all -inf (an overflowed +inf beside finite logits still leaves tokens)."""
    for where in (0, 2, 4):
        x = LOGITS.clone()
        x[where] = float("nan")
        with pytest.raises(s.InvalidLogits, match="NaN"):
            s.run_pipeline(x, s.SamplingConfig(0.7))
    assert s._any_finite(torch.tensor([float("inf"), 1.0, float("-inf")]))
    assert not s._any_finite(torch.tensor([float("inf"), float("-inf")]))
    assert not s._any_finite(torch.full((4,), float("-inf")))
    assert s._any_finite(torch.tensor([float("-inf"), -3.0]))


@pytest.mark.slow  # 300 seeded draws from two 262,144-token distributions
def test_a_draw_does_not_move_with_float_rounding_of_the_probabilities():
    """The same prompt's logits differ by ~1e-5 alone and batched with a class; a seeded draw
    must not care. A long-tailed distribution over 262,144 tokens (five likely tokens, more
    than 5% of the mass spread thin over the rest), logits moved by at most 2e-5: 300 seeds draw the same
    tokens. (One uniform number and a running sum, inverse CDF, drew another token for 11 of
    these 300 seeds: its running sum moves by the rounding of every token before the drawn one.)"""
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(262_144, generator=gen) * 2.0                               # (V,)
    logits[:5] += torch.tensor([14.0, 13.0, 12.5, 11.0, 10.0])
    noisy = logits + (torch.rand(logits.shape, generator=gen) - 0.5) * 4e-5
    p, q = torch.softmax(logits / 0.8, -1), torch.softmax(noisy / 0.8, -1)
    assert float(p[5:].sum()) > 0.05                                                 # a real tail
    draws = lambda probs: [s.sample_next(probs, torch.Generator().manual_seed(k)) for k in range(300)]  # noqa: E731
    a, b = draws(p), draws(q)
    assert len(set(a)) > 20 and a == b
