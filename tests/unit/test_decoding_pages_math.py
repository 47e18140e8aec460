"""Top-k/top-p measurements, stable softmax and logit-bias math on hand-built distributions."""
import math

import numpy as np
import pytest
import torch

from lib.concepts.logit_bias import logit_bias as lb
from lib.concepts.stable_softmax import stable_softmax as ss
from lib.concepts.top_k_top_p import top_k_top_p as tkp

PROBS = torch.tensor([0.1, 0.5, 0.05, 0.2, 0.15])
LOGITS = PROBS.log()


# ---- top-k / top-p -----------------------------------------------------------------------
def test_cut_curve_reports_both_cuts():
    c = tkp.cut_curve(LOGITS, 1.0, k=2, p=0.7)
    assert c.ids.tolist() == [1, 3, 4, 0, 2]
    assert c.nucleus == 2 and c.k_kept == 2
    assert c.nucleus_mass == pytest.approx(0.7, abs=1e-6)
    assert c.cumulative[-1] == pytest.approx(1.0, abs=1e-6)


def test_kept_sets_counts_disagreement():
    s = tkp.kept_sets(LOGITS, 1.0, k=1, p=0.9)
    assert (s.both, s.only_k, s.only_p) == (1, 0, 3)


def test_order_effect_temperature_after_top_p_keeps_a_constant_set():
    e = tkp.order_effect(LOGITS, 0.7, [0.3, 1.0, 5.0])
    assert len(set(e.t_after.tolist())) == 1
    assert e.t_first[0] < e.t_first[-1]


def test_nucleus_margins_say_reached_and_minimal():
    from lib.decoding.sampling import top_p_mask
    reach, minimal = tkp.nucleus_margins(LOGITS, top_p_mask(LOGITS, 0.8), 0.8)
    assert reach >= 0 and minimal > 0
    too_big = torch.tensor([True] * 5)
    assert tkp.nucleus_margins(LOGITS, too_big, 0.8)[1] < 0          # not minimal


# ---- stable softmax ----------------------------------------------------------------------
def test_thresholds_match_the_dtype_limits():
    assert ss.overflow_threshold(torch.float16) == pytest.approx(math.log(65520), abs=1e-9)
    assert ss.overflow_threshold(torch.float32) == pytest.approx(88.7228, abs=1e-4)
    assert ss.underflow_threshold(torch.float16) == pytest.approx(math.log(2 ** -25), abs=1e-9)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_exp_overflows_and_underflows_exactly_at_the_thresholds_over_the_whole_grid(dtype):
    """Every finite value of the 16-bit format: exp(x) is inf iff x > overflow threshold, 0 iff
    x < underflow threshold."""
    x = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype)
    x = x[torch.isfinite(x)]
    e = torch.exp(x)
    assert torch.equal(torch.isinf(e), x.double() > ss.overflow_threshold(dtype))
    assert torch.equal(e == 0, x.double() < ss.underflow_threshold(dtype))


def test_stable_equals_naive_where_both_work_and_survives_where_naive_fails():
    z = torch.tensor([1.0, 2.0, 3.0, -1.0], dtype=torch.float16)
    torch.testing.assert_close(ss.stable_softmax(z).float(), ss.naive_softmax(z).float(), atol=1e-3, rtol=0)
    big = z + 20                                                   # exp(23) overflows float16
    assert ss.naive_status(big) == ss.predicted_status(big) == "overflow"
    assert torch.isnan(ss.naive_softmax(big)).any()
    torch.testing.assert_close(ss.stable_softmax(big).float(), ss.stable_softmax(z).float(), atol=1e-3, rtol=0)
    small = z - 40
    assert ss.naive_status(small) == ss.predicted_status(small) == "underflow"
    assert not torch.isnan(ss.stable_softmax(small)).any()


def test_float32_sum_overflows_before_any_single_exp():
    z = torch.full((100,), 86.0)              # each exp(86) is finite; 100 of them are not
    assert not torch.isinf(torch.exp(z)).any()
    assert ss.naive_status(z) == ss.predicted_status(z) == "overflow"


def test_logsumexp_forms():
    z = torch.tensor([1000.0, 999.0, 998.0])
    assert math.isinf(ss.naive_logsumexp(z))
    assert ss.stable_logsumexp(z) == pytest.approx(float(torch.logsumexp(z.double(), 0)), abs=1e-4)


def test_offset_sweep_and_window_agree_on_a_small_vector():
    x = torch.linspace(-5, 5, 50)
    w = ss.safe_window(x, 1.0, "fp16")
    sweep = ss.offset_sweep(x, 1.0, [w[0] - 1, (w[0] + w[1]) / 2, w[1] + 1], ("fp16",))
    assert sweep.measured["fp16"] == ["underflow", "ok", "overflow"]
    assert sweep.mismatches() == 0 and all(sweep.stable_ok["fp16"])


def test_the_sweeps_stable_check_is_every_probability_finite_and_their_sum_within_a_percent():
    x = torch.linspace(-5, 5, 50)
    offsets = (-200.0, -60.0, 0.0, 11.5, 60.0, 7e4)             # fp16 stores 7e4 + x as inf (max 65,504)
    sweep = ss.offset_sweep(x, 1.0, offsets, ("fp16", "fp32"))
    for name in ("fp16", "fp32"):
        for c, ok in zip(offsets, sweep.stable_ok[name]):
            q = ss.stable_softmax(ss.transform(x, 1.0, c, ss.DTYPES[name])).double()
            assert ok == (bool(torch.isfinite(q).all()) and abs(float(q.sum()) - 1.0) <= 1e-2), (name, c)
    assert sweep.stable_ok["fp32"] == [True] * 6 and not all(sweep.stable_ok["fp16"])   # both outcomes seen


def test_shift_invariance_in_float64():
    assert ss.shift_invariance(LOGITS, (-100.0, 3.0, 100.0)) < 1e-15


# ---- logit bias --------------------------------------------------------------------------
def test_parse_words_and_variants():
    assert lb.parse_words(" Paris, ,paris,Paris ") == ["Paris", "paris"]
    assert lb.parse_words("") == []
    assert lb.variants("paris") == ["paris", " paris", "Paris", " Paris"]
    assert lb.variants("🙂") == ["🙂", " 🙂"]


class FakeTokenizer:
    """Whitespace-sensitive toy tokenizer: ' x' and 'x' are different ids, long words split."""
    vocab = {"Par": 1, "is": 2, " Paris": 3, "Paris": 4, " par": 5}

    def __call__(self, text, add_special_tokens=False):
        if text in self.vocab:
            return {"input_ids": [self.vocab[text]]}
        return {"input_ids": [self.vocab["Par"], self.vocab["is"]]} if text.lower().strip() == "paris" else {"input_ids": []}

    def decode(self, ids):
        inv = {v: k for k, v in self.vocab.items()}
        return "".join(inv[i] for i in ids)


def test_word_tokens_and_bias_modes():
    entries = lb.word_tokens(FakeTokenizer(), ["paris"])
    by_variant = {e.variant: e.ids for e in entries}
    assert by_variant["Paris"] == (4,) and by_variant[" Paris"] == (3,) and by_variant["paris"] == (1, 2)
    bias, seq = lb.bias_settings(entries, -2.0, "first")
    assert seq == () and sorted(t for t, _ in bias) == [1, 3, 4]          # 'Par' once, not twice
    bias, seq = lb.bias_settings(entries, -2.0, "sequence")
    assert bias == () and ((1, 2), -2.0) in seq and ((3,), -2.0) in seq
    with pytest.raises(ValueError):
        lb.bias_settings(entries, 1.0, "middle")


@pytest.mark.parametrize("b", [-3.0, 0.5, 4.0, -math.inf])
@pytest.mark.parametrize("T", [0.5, 1.0, 2.0])
def test_odds_ratio_is_e_to_the_b_over_t_and_other_odds_unchanged(b, T):
    x = torch.randn(10, generator=torch.Generator().manual_seed(0)) * 2
    r = lb.odds_report(x, 3, b, T, lb.BIAS_FIRST, top=9)
    assert r.predicted == (0.0 if b == -math.inf else pytest.approx(math.exp(b / T)))
    tol = lb.odds_tolerance(x, b, T)
    assert tol < 1e-4
    assert r.target_err < tol and r.others_err < tol
    r2 = lb.odds_report(x, 3, b, T, lb.TEMPERATURE_FIRST, top=9)
    assert r2.predicted == (0.0 if b == -math.inf else pytest.approx(math.exp(b)))
    assert r2.target_err < tol


def test_odds_report_detects_a_wrong_bias():
    """The measurement is not tautological: a bias on a second token breaks 'others unchanged'."""
    from lib.decoding.sampling import SamplingConfig, run_pipeline
    x = torch.randn(10, generator=torch.Generator().manual_seed(0))
    good = run_pipeline(x, SamplingConfig(1.0, bias=((3, 2.0),))).probs
    bad = run_pipeline(x, SamplingConfig(1.0, bias=((3, 2.0), (5, 0.1)))).probs
    base = torch.softmax(x, -1)
    ratio = lambda p: (p[5] / p[7]) / (base[5] / base[7])  # noqa: E731
    assert abs(float(ratio(good)) - 1) < 1e-5 and abs(float(ratio(bad)) - 1) > 0.1


def test_bias_after_the_filter_can_leave_nothing():
    rows = lb.order_table(LOGITS, ((1, -math.inf),), (), 1, 1.0, 0.3)
    assert rows[0].p_target == 0.0 and rows[0].top_token == 3            # ban first: next token wins
    assert rows[2].kept is None                                           # top-p kept only token 1


def test_completed_sequences_looks_back_into_the_context():
    assert lb.completed_sequences([7, 1], [2, 9], [(1, 2)]) == 1
    assert lb.completed_sequences([1, 2], [9], [(1, 2)]) == 0            # completed in the prompt
    assert lb.completed_sequences([], [5, 5], [(5,)]) == 2


def test_inputs_untouched_by_measurements():
    x = LOGITS.clone()
    tkp.cut_curve(x, 0.7, 2, 0.8)
    tkp.kept_sets(x, 0.7, 2, 0.8)
    ss.report(x, 2.0, 10.0, "fp16")
    lb.odds_report(x, 2, 1.5, 0.7, top=3)
    lb.top_change(x, ((2, 1.0),), (), 1.0)
    assert torch.equal(x, LOGITS)
    np.testing.assert_array_equal(PROBS.log().numpy(), x.numpy())


def test_fp32_sum_overflows_before_the_largest_single_exp():
    from lib.concepts.stable_softmax import stable_softmax as ss

    z = torch.tensor([3.0, 2.0, 1.0, 0.0])
    c_sum, c_one = ss.fp32_overflow_points(z, 1.0)
    assert c_one - c_sum == pytest.approx(float(torch.logsumexp(z.double(), 0)) - 3.0, abs=1e-9)
    mid = (c_sum + c_one) / 2
    zz = ss.transform(z, 1.0, mid, torch.float32)
    assert ss.naive_status(zz) == "overflow" and not bool(torch.isinf(torch.exp(zz)).any())


def test_shift_report_bounds_the_rounding_and_catches_a_wrong_softmax(monkeypatch):
    from lib.concepts.stable_softmax import stable_softmax as ss

    g = torch.Generator().manual_seed(0)
    z = torch.randn(500, generator=g) * 4
    for name, eps in (("fp16", 1e-3), ("bf16", 8e-3), ("fp32", 1.2e-7)):
        for c in (-100.0, 0.0, 60.0):
            r = ss.shift_report(z, 1.0, c, name)
            assert r.excess <= eps, (name, c, r)
    monkeypatch.setattr(ss, "stable_softmax", lambda x: torch.softmax(x.float() * 1.01, -1).to(x.dtype))
    assert ss.shift_report(z, 1.0, 0.0, "fp32").excess > 1e-4


def test_temperature_entropy_is_never_negative_zero():
    import math as _m

    from lib.concepts.temperature import temperature as tm

    h = tm.entropy_bits(torch.tensor([1.0, 0.0, 0.0]))
    assert h == 0.0 and _m.copysign(1.0, h) == 1.0


def test_logit_bias_panel_bans_the_token_even_without_a_ban_set(monkeypatch):
    """Issue 32 item 4: at the default (a finite b, Ban not ticked) the panel still applies
    b = -inf to the same logits, so a ban bug shows there: a bias vector built as b * one_hot
    (-inf x 0 = NaN everywhere else) is exact for b = -3 and red only through this line."""
    from lib.concepts.logit_bias import checks
    from lib.decoding import sampling

    logits = torch.randn(64, generator=torch.Generator().manual_seed(0)) * 3          # (V,)
    entries = (lb.WordTokens("x", "x", (7,), ("x",)),)

    def names():
        inp = checks.check_inputs(logits, entries, -3.0, 0.5, 1.0, "first", 7, (1, 2, 3), (4, 5))
        return {r.name: r.passed for r in checks.page_checks(inp, "x", lambda k, **_: k)}
    assert names() == {"check_odds": True, "check_others": True, "check_order_t": True, "check_hf": True,
                       "check_chain": True, "check_odds_ban": True}

    def apply_bias(lg, bias):
        out = lg.clone()
        for tok, b in bias:
            out = out + b * torch.nn.functional.one_hot(torch.tensor(tok), out.shape[-1]).to(out.dtype)
        return out
    monkeypatch.setattr(sampling, "apply_bias", apply_bias)
    got = names()
    assert got["check_odds_ban"] is False
    assert all(v for k, v in got.items() if k != "check_odds_ban")      # only the ban line sees it
