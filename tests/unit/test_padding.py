"""Padding: batch layout, masked padded outputs = per-prompt outputs, packing, no-mask effects."""
import pytest
import torch

from lib.concepts.padding_mask import padding as P
from lib.model.from_transformers import engine_from_hf
from tests.conftest import tiny_gemma3, tiny_llama

PROMPTS = ((1, 5, 9), (2, 7, 11, 13, 17, 19, 23), (3, 4), (8, 6, 10, 12, 14))


def test_pad_batch_left_and_right():
    left = P.pad_batch(PROMPTS, 0, "left")
    right = P.pad_batch(PROMPTS, 0, "right")
    assert left.ids.shape == right.ids.shape == (4, 7)
    assert left.positions[0].tolist() == [-1, -1, -1, -1, 0, 1, 2]
    assert right.positions[0].tolist() == [0, 1, 2, -1, -1, -1, -1]
    assert left.ids[2].tolist() == [0, 0, 0, 0, 0, 3, 4]
    assert left.valid_fraction == pytest.approx(17 / 28)
    assert left.last_index().tolist() == [6, 6, 6, 6] and right.last_index().tolist() == [2, 6, 1, 4]
    shifted = P.pad_batch(PROMPTS, 0, "left", "mask_shift")
    assert shifted.positions[0].tolist() == [-1, -1, -1, -1, 4, 5, 6]
    nomask = P.pad_batch(PROMPTS, 0, "left", "no_mask")
    assert nomask.positions[0].tolist() == list(range(7))
    assert P.pad_batch(PROMPTS, 0, "right", length=10).ids.shape == (4, 10)


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError):
        P.pad_batch((), 0)
    with pytest.raises(ValueError):
        P.pad_batch(((1,), ()), 0)
    with pytest.raises(ValueError):
        P.pad_batch(PROMPTS, 0, "middle")


def test_packed_inputs():
    ids, pos, seg = P.packed_inputs(((4, 5), (6, 7, 8)))
    assert ids.tolist() == [[4, 5, 6, 7, 8]] and pos.tolist() == [[0, 1, 0, 1, 2]]
    assert seg.tolist() == [0, 0, 1, 1, 1]


@pytest.mark.parametrize("make", [tiny_gemma3, lambda: tiny_llama("qwen2")], ids=["gemma3", "qwen2"])
def test_masked_padded_outputs_equal_per_prompt_outputs(make):
    hf = make()
    eng = engine_from_hf(hf)
    cmp = P.compare_variants(eng, PROMPTS, 0)
    by = {(v.side, v.mode): v for v in cmp.variants}
    for side in P.SIDES:
        assert by[(side, "mask")].max_hidden_diff < 1e-4
        assert by[(side, "mask")].top1_changed == 0
    assert cmp.packed_hidden_diff < 1e-4
    assert by[("right", "no_mask")].max_hidden_diff < 1e-4   # causal: later padding is never seen
    assert by[("left", "no_mask")].max_hidden_diff > 1e-2    # earlier padding is attended


def test_padded_batch_matches_transformers_with_attention_mask():
    """Our left-padded batch (positions -1 = padding) against transformers' attention_mask path."""
    hf = tiny_llama("llama")
    eng = engine_from_hf(hf)
    batch = P.pad_batch(PROMPTS, 0, "left")
    ours = eng.head(P.padded_hidden(eng, batch))[:, -1]
    mask = batch.valid.long()
    pos = (mask.cumsum(-1) - 1).clamp_min(0)
    with torch.no_grad():
        theirs = hf(batch.ids, attention_mask=mask, position_ids=pos).logits[:, -1]
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0)


def test_timings_have_every_run():
    hf = tiny_gemma3()
    eng = engine_from_hf(hf)
    tm = P.measure_times(eng, PROMPTS, 0, (0, 32), repeats=1)
    assert tm.labels == ["padded:7", "padded:39", "one_by_one", "packed"]
    assert tm.tokens == [28, 156, 17, 17] and all(s > 0 for s in tm.seconds)


def test_padded_run_measured_apart_joins_in_place():
    """The page measures the runs that do not depend on the extra padding once per prompts and
    the extra padded run apart: joined, they are the same runs in the same order as one call."""
    eng = engine_from_hf(tiny_gemma3())
    one = P.measure_times(eng, PROMPTS, 0, (0, 32), repeats=1)
    base = P.measure_times(eng, PROMPTS, 0, (0,), repeats=1)
    more = P.measure_times(eng, PROMPTS, 0, (32,), repeats=1, padded_only=True)
    assert more.labels == ["padded:39"]
    tm = P.with_padded(base, more)
    assert (tm.labels, tm.tokens, tm.score_entries) == (one.labels, one.tokens, one.score_entries)
    assert tm.seconds == [base.seconds[0], more.seconds[0], *base.seconds[1:]]
    assert tm.load_avg == max(base.load_avg, more.load_avg)
    assert tm.cpus == base.cpus > 0             # the busy verdict reads the load per core
    assert P.time_ratio(tm) == (more.seconds[0] / base.seconds[0], 156 / 28)
    with pytest.raises(ValueError):
        P.with_padded(base, base)                   # not padded runs only


def test_no_padding_batch_gets_a_check_that_can_hold():
    """Equal lengths (Try this #1): the no-mask check becomes 'nothing to hide' and passes."""
    from lib.concepts.padding_mask import checks

    eng = engine_from_hf(tiny_gemma3())
    same = (PROMPTS[0], PROMPTS[0])
    cmp = P.compare_variants(eng, same, 0)
    tm = P.Timings(["padded:5", "padded:37", "one_by_one", "packed"], [10, 74, 10, 10], [1, 1, 1, 1],
                   [1.0, 3.0, 1.0, 1.0], [1.0] * 4, [1.0] * 4, 1, 0.0)
    res = checks.page_checks(cmp, tm, tuple(len(p) for p in same), lambda k, **_: k)
    assert [r.name for r in res] == ["check_equal", "check_packed", "check_nopad", "check_time"]
    assert all(r.passed for r in res)


def test_batch_figure_cuts_cell_text_to_its_cell_and_keeps_it_whole_on_hover():
    import numpy as np
    from lib.concepts.padding_mask.figures import CHAR_PX, PLOT_PX, batch_figure, fit_cell
    from lib.ui.responsive import WIDE_PX

    assert fit_cell("ab", 32) == "ab" and fit_cell("abcdefgh", 8) == "abcdefgh"
    assert PLOT_PX < WIDE_PX              # the map is drawn at least WIDE_PX wide (page.figure(wide=True))
    assert fit_cell("abcdefgh", 22) == "abc…" and len(fit_cell("abcdefgh", 22)) <= PLOT_PX / 22 / CHAR_PX
    assert fit_cell("abcdefgh", 32) == "a…"
    texts = [["·", " capital", " of"], [" The", " capital", " of"]]
    fig = batch_figure(np.array([[0, 1, 1], [1, 1, 1]]), texts, np.array([[-1, 0, 1], [0, 1, 2]]),
                       {"prompt": "prompt", "col": "col", "pos": "pos", "x": "x", "title": "t"})
    hm = fig.data[0]
    assert [[str(c[1]) for c in row] for row in hm.customdata] == texts        # hover: the whole token
    assert all(len(s) <= max(1, int(PLOT_PX / 3 / CHAR_PX)) for row in hm.text for s in row)


def test_the_timing_check_is_not_judged_on_a_busy_or_noisy_machine():
    """Issue 32 item 5: a failed timing on a loaded machine (load average per core above
    BUSY_LOAD) or with disagreeing repeats is shown as not judged (None), never ❌; a failure
    measured quietly stays a failure, and a pass stands whatever the load."""
    from lib.concepts.padding_mask import checks

    eng = engine_from_hf(tiny_gemma3())
    cmp = P.compare_variants(eng, PROMPTS, 0)
    lens = tuple(len(p) for p in PROMPTS)
    labels, tokens = ["padded:7", "padded:39", "one_by_one", "packed"], [28, 156, 17, 17]

    def verdict(seconds, load, cpus=2, spread=0.0):
        tm = P.Timings(labels, tokens, [1] * 4, seconds, [s * (1 - spread / 2) for s in seconds],
                       [s * (1 + spread / 2) for s in seconds], 3, load, cpus)
        return checks.page_checks(cmp, tm, lens, lambda k, **_: k)[-1]
    flat = [1.0, 1.05, 1.0, 1.0]                         # time did not follow the padded shape
    assert verdict(flat, load=0.8).passed is False       # quiet: a real failure
    busy = verdict(flat, load=6.0)
    assert busy.passed is None and busy.detail == "busy_detail" and busy.verdict == "not_judged"
    assert verdict(flat, load=0.8, spread=0.8).passed is None
    assert verdict([1.0, 3.0, 1.0, 1.0], load=6.0).passed is True
