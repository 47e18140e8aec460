"""Concept figures laid out for a phone (390 px) and a projector (issue 33): labels that do not
print into one another, annotations inside the chart. Cheap checks on the figure objects, by
estimated text width (no browser)."""
from __future__ import annotations

import numpy as np
import pytest

from lib.ui import responsive

TITLE_CHAR_PX = 8.2          # a 16 px panel title's average character, px


def _panel_centres_px(fig, plot_px):
    xs = sorted(fig.layout[k].domain for k in fig.layout if k.startswith("xaxis"))
    return [(d[0] + d[1]) / 2 * plot_px for d in xs]


def test_gqa_panel_titles_fit_their_panels_and_tick_labels_stay_off_the_maps():
    from lib.concepts.gqa.figures import head_maps_figure

    tokens = ["<bos>", "Alice", "␣gave", "␣Bob"]
    for title in ("query head {h} → K/V head 0", "head query {h} → head K/V 0"):      # en, id
        fig = head_maps_figure(np.full((4, 4, 4), 0.25), tokens, [title.format(h=h) for h in range(4)],
                               {"hover": "", "y": "query position", "x": "key position", "title": "t"})
        assert responsive.needs_width(fig)
        shown, _ = responsive.shown_figure(fig, wide=True)
        plot_px = responsive.WIDE_PX - 180          # less the token labels, the y axis title, the colour bar (as drawn)
        centres = _panel_centres_px(shown, plot_px)
        step = min(b - a for a, b in zip(centres, centres[1:]))
        for a in shown.layout.annotations:
            widest = max(len(line) for line in a.text.split("<br>")) * TITLE_CHAR_PX
            assert widest <= step - 8, (a.text, widest, step)
        shown_ticks = [shown.layout[f"yaxis{i}"].showticklabels for i in ("", 2, 3, 4)]
        assert shown_ticks == [None, False, False, False]                   # only the first map's left


def test_gqa_four_maps_number_their_keys_instead_of_a_turned_token_under_each():
    """The default prompt has 17 tokens: under four maps of ~140 px (a phone's scrolled 720 px) a
    turned 9 px token under every key was unreadable. The keys are numbered every few positions,
    upright and at least 11 px; the first map's rows say which token each position holds."""
    from lib.concepts.gqa.figures import head_maps_figure

    tokens = ["<bos>"] + [f"␣w{i}" for i in range(16)]
    fig = head_maps_figure(np.full((4, 17, 17), 1 / 17), tokens, [f"head {h}" for h in range(4)],
                           {"hover": "", "y": "query position", "x": "key position", "title": "t"})
    shown, _ = responsive.shown_figure(fig, wide=True)
    map_px = (responsive.WIDE_PX - 180) / 4
    for i in ("", 2, 3, 4):
        ax = shown.layout[f"xaxis{i}"]
        shown_at = [v for v in range(17) if ax.tickvals is None and v % ax.dtick == 0] if ax.dtick else list(ax.tickvals)
        assert 2 <= len(shown_at) <= 6, shown_at                      # not 17
        assert ax.tickangle in (0, None) and (ax.tickfont.size or 12) >= 11
        widest = max(len(str(v)) for v in shown_at) * 7
        assert len(shown_at) * widest < map_px * 0.7                  # room between the numbers
    rows = list(shown.layout.yaxis.ticktext)
    assert rows[5] == "5: ␣w4" and len(rows) == 17                   # position -> token
    two = head_maps_figure(np.full((2, 17, 17), 1 / 17), tokens, ["a", "b"],
                           {"hover": "", "y": "q", "x": "k", "title": "t"})
    assert list(two.layout.xaxis.ticktext) == tokens                 # two wide maps keep the tokens


def test_gqa_cache_chart_leaves_room_for_its_last_context_label_on_a_phone():
    """At 390 px Plotly turns the context labels 30° and hid "32.768", the last one, past the
    chart's right edge, while the caption quotes 32,768 tokens: the axis reaches past the last
    context by at least that label's turned width."""
    import math

    from lib.concepts.gqa.figures import cache_bytes_figure
    from lib.ui.figure_room import PHONE_PLOT_PX, TICK_CHAR_PX

    contexts = tuple(2 ** i for i in range(7, 16))
    fig = cache_bytes_figure(contexts, {"MHA": [c / 100 for c in contexts]}, "MHA",
                             {"own": "", "hover": "", "x": "x", "y": "y", "title": "t"},
                             fmt=lambda v, spec: format(v, spec).replace(",", "."))
    lo, hi = fig.layout.xaxis.range
    px_per_decade = PHONE_PLOT_PX / (hi - lo)
    label_px = len("32.768") * TICK_CHAR_PX * math.cos(math.radians(30))
    assert (hi - math.log10(contexts[-1])) * px_per_decade >= label_px * 0.9, (hi, label_px)
    assert lo < math.log10(contexts[0])


LABEL_CHAR_PX, PHONE_PLOT_PX = 6.2, 300        # an 11 px label's character; a phone's plot width


def _extent_px(a, lo, hi, plot_px=PHONE_PLOT_PX):
    """(left, right) pixels of annotation `a` at x in data units of an axis over lo..hi."""
    x = (a.x - lo) / (hi - lo) * plot_px
    w = len(a.text) * LABEL_CHAR_PX
    return {"left": (x, x + w), "right": (x - w, x), "center": (x - w / 2, x + w / 2)}[a.xanchor or "center"]


def _rows_apart_or_side_by_side(labels, lo, hi):
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            if (a.y, a.yshift or 0) != (b.y, b.yshift or 0):
                continue                                  # on different rows
            (a0, a1), (b0, b1) = _extent_px(a, lo, hi), _extent_px(b, lo, hi)
            assert a1 <= b0 or b1 <= a0, (a.text, b.text)


def test_stable_softmax_threshold_labels_stack_instead_of_printing_into_one_another():
    from lib.concepts.stable_softmax.figures import histogram_figure

    edges = np.linspace(-22, 19, 42)
    L = {"count": "tokens", "tokens": "tokens", "max": "max z", "x": "z", "y": "n", "title": "t",
         "overflow": "exp(z) = inf di atas 11.09", "underflow": "exp(z) = 0 di bawah -17.33"}
    fig = histogram_figure(edges, np.arange(41) + 1, 11.09, -17.33, 19.09, L)
    labels = [a for a in fig.layout.annotations if a.text != ""]
    assert len(labels) == 3
    _rows_apart_or_side_by_side(labels, -22, 19)
    for a in labels:                                     # inside the chart's width
        left, right = _extent_px(a, -22, 19)
        assert left >= -5 and right <= PHONE_PLOT_PX + 5, (a.text, left, right)
    shown, _ = responsive.shown_figure(fig)
    assert shown.layout.margin.t >= 34 + 13               # room for both rows above the plot


def test_rope_context_label_sits_where_no_wavelength_line_reaches_it():
    from lib.concepts.rope_shift.figures import spectrum_figure

    pairs = np.arange(128)
    wl = np.array([2 * np.pi * base ** (2 * pairs / 256) for base in (10_000, 1_000_000)])
    fig = spectrum_figure(wl, ["θ = 10,000", "θ = 1,000,000"], 32_768,
                          {"hover": "", "context": "konteks 32.768", "y": "y", "x": "x", "title": "t"})
    (label,) = [a for a in fig.layout.annotations if a.text]
    assert label.x == 0 and label.xanchor == "left" and label.bgcolor
    span = len(label.text) * LABEL_CHAR_PX / PHONE_PLOT_PX * len(pairs)      # the pairs under the label
    for tr in fig.data:
        ys = np.asarray(tr.y)[np.asarray(tr.x) <= span]
        assert ys.max() < 32_768 / 3, tr.name        # far below the line (and the label above it)


def test_attention_scaling_uniform_label_is_on_a_box_the_curves_pass_under():
    from lib.concepts.attention_scaling.figures import sweep_figure

    scales = np.geomspace(0.01, 10, 12)
    fig = sweep_figure(scales, np.linspace(4, 0.1, 12), np.linspace(0.05, 1, 12), 4.09, 0.0625, 1.0,
                       {"entropy": "H", "max": "max", "uniform": "uniform rows", "model": "m", "chosen": "c",
                        "x": "x", "title": "t"})
    (label,) = [a for a in fig.layout.annotations if a.text == "uniform rows"]
    assert label.bgcolor and "0,0,0,0" not in label.bgcolor.replace(" ", "")
    assert label.yanchor == "top" and label.xanchor == "right"     # under the line's right end (the largest
                                                                    # weight, near 1 there, runs above the line)


def test_beam_tree_labels_have_a_halo_the_winner_path_passes_under():
    from lib.concepts.beam_search.beam_search import FINISHED, KEPT, PRUNED, BeamRecord, Candidate, Hypothesis
    from lib.concepts.beam_search.figures import tree_figure

    rec = BeamRecord((2,), 2, 2, (1,), True)
    rec.candidates = [Candidate(0, 0, -1, 5, -0.1, -0.1, False, KEPT), Candidate(0, 1, -1, 6, -0.5, -0.5, False, KEPT),
                      Candidate(1, 0, 0, 1, -0.2, -0.3, True, FINISHED), Candidate(1, 1, 1, 7, -0.9, -1.4, False, PRUNED)]
    rec.hypotheses = [Hypothesis((5, 1), -0.3, 1, 2, False)]
    rec.n_steps = 2
    labels = {"winner": "winner", "hover": "{tok}", "hover_score": "{score}", "prompt": "prompt", "x": "x",
              "y": "y", "title": "t", "after_stop": "after", **{f"fate_{k}": k for k in (KEPT, FINISHED, "cut", "pruned")}}
    fig = tree_figure(rec, ["a", "b", "<eos>", "c"], {2: -0.3}, 0, 1, labels)
    texts = [tr for tr in fig.data if tr.text is not None and tr.name in (KEPT, FINISHED)]
    assert texts and all(tr.textfont.shadow == "auto" for tr in texts)
    shown, _ = responsive.shown_figure(fig, wide=True)
    leg = shown.layout.legend             # a column at the left: in view on a phone, where the tree scrolls
    assert leg.orientation == "v" and leg.x == 0 and leg.xanchor == "left"
    assert responsive._legend_rows(shown) == 4                    # winner, kept, finished, pruned: a row each
    m = shown.layout.margin
    plot_h = shown.layout.height - m.t - (m.b or 0) - responsive.x_axis_px(shown) - 4 * responsive.LEGEND_ROW_PX
    assert -leg.y * plot_h >= responsive.x_axis_px(shown)         # under the x axis title, not on it
    assert all(tr.cliponaxis is False for tr in texts)             # the top row's labels are not cut off
    assert responsive.shown_figure(fig, present=True)[0].layout.legend.orientation == "h"   # 1,280 px: a row


def test_prefix_caching_block_labels_fit_their_blocks_and_the_timing_bars_keep_the_width():
    from types import SimpleNamespace

    from lib.concepts.prefix_caching import figures as pc

    n = 8
    rows = [SimpleNamespace(index=i, hit=i < 3, hash_new="" if i == n - 1 else "a1b2c3d4") for i in range(n)]
    labels = {"hit": "cocok", "miss": "meleset", "partial": "sebagian", "new": "B (baru)",
              "cached": "A (di cache)", "x": "blok logis", "title": "t"}
    fig = pc.hash_chain(["f0e1d2c3"] * n, rows, labels)
    block_px = 0.8 * pc.CHAIN_PX / (n + 0.1)
    for a in fig.layout.annotations:
        if a.text:
            widest = max(len(line) for line in a.text.split("<br>")) * a.font.size * pc.BLOCK_CHAR
            assert widest <= block_px, (a.text, a.font.size, widest, block_px)
    names = ["prefill penuh B (48 token)", "dengan pemakaian ulang: hanya 16 token dihitung"]
    fig = pc.timing_figure(names, [0.8, 0.3], {"title": "t", "x": "detik"})
    assert fig.layout.yaxis.showticklabels is False               # no name at the left squeezing the bars
    assert [a.text.replace("<br>", " ") for a in fig.layout.annotations] == names    # each above its bar
    assert fig.layout.height >= 260


def test_prefix_caching_block_labels_are_large_enough_on_a_projector_and_still_fit():
    """The presenter view's 1280x720 projector: the labels were 7-10 px grown to ~9-13 px, too
    small at the back of a hall; they are sized for the projector's wider blocks, at least 14 px
    as drawn there, and still fit their blocks."""
    from types import SimpleNamespace

    from lib.concepts.prefix_caching import figures as pc

    assert pc.PRESENT_GROWTH == responsive.PRESENT_SCALE
    labels = {"hit": "cocok", "miss": "meleset", "partial": "sebagian", "new": "B (baru)",
              "cached": "A (di cache)", "x": "blok logis", "title": "t"}
    for n in (3, 4, 8):
        rows = [SimpleNamespace(index=i, hit=i < 1, hash_new="" if i == n - 1 else "a1b2c3d4") for i in range(n)]
        fig = pc.hash_chain(["f0e1d2c3"] * n, rows, labels, present=True)
        shown, _ = responsive.shown_figure(fig, present=True)
        block_px = 0.8 * pc.PRESENT_CHAIN_PX / (n + 0.1)
        sizes = [a.font.size for a in shown.layout.annotations if a.text]
        assert min(sizes) >= 14, (n, sizes)
        for a in shown.layout.annotations:
            if a.text:
                widest = max(len(line) for line in a.text.split("<br>")) * a.font.size * pc.BLOCK_CHAR
                assert widest <= block_px, (n, a.text, a.font.size, widest, block_px)
        phone = pc.hash_chain(["f0e1d2c3"] * n, rows, labels)
        assert max(a.font.size for a in phone.layout.annotations if a.text) <= pc.BLOCK_FONT[1]


def test_stacked_line_labels_keep_apart_at_the_projectors_font():
    from lib.concepts.plot_marks import x_vline

    fig = responsive.go.Figure(responsive.go.Scatter(x=[0, 10], y=[0, 1]))
    x_vline(fig, 4, "exp(z) = 0 below -17.33")
    x_vline(fig, 6, "exp(z) = inf above 11.09", xanchor="right")
    shown, _ = responsive.shown_figure(fig, present=True)
    low, high = sorted(shown.layout.annotations, key=lambda a: a.yshift or 0)
    assert (high.yshift or 0) - (low.yshift or 0) >= high.font.size          # one row per label, not on top
    assert shown.layout.margin.t >= 34 + high.yshift                           # the upper row inside the figure


def test_padding_mask_time_bars_keep_their_row_counts_readable_on_a_phone():
    """Issue 33 re-look: '344 baris token' above a ~60 px bar was shrunk by Plotly to ~7 px on a
    phone. The count sits on a line above its words and no label is drawn under 11 px."""
    from lib.concepts.padding_mask import figures as pm

    fig = pm.times_figure(["a", "b", "c", "d"], [0.2, 1.4, 0.3, 0.25], [0.1] * 4, [2.0] * 4,
                          ["88 baris token", "344 baris token", "41 baris token", "41 baris token"],
                          {"y": "ms", "title": "t"})
    assert fig.layout.uniformtext.minsize >= 11 and fig.layout.uniformtext.mode == "show"
    bar = fig.data[0]
    assert max(len(line) for s in bar.text for line in s.split("<br>")) <= 11
    assert bar.text[1].startswith("344<br>")


def test_beam_tree_gives_the_labelled_ranks_whole_rows_and_squeezes_the_pruned_ones():
    """Issue 33 re-look: the tree drew 20 equal rows, its 4 beams' token labels crowded into the top
    fifth on the projector. A rank with a labelled node takes a whole row; ranks only pruned
    candidates reach share a few rows below, numbered every 5th."""
    from lib.concepts.beam_search.beam_search import KEPT, PRUNED, BeamRecord, Candidate, Hypothesis
    from lib.concepts.beam_search.figures import tree_figure

    rec = BeamRecord((2,), 2, 2, (1,), True)
    rec.candidates = [Candidate(0, r, -1, 5 + r, -0.1 * r, -0.1 * r, False, KEPT if r < 2 else PRUNED) for r in range(20)]
    rec.hypotheses, rec.n_steps = [Hypothesis((5,), 0.0, 1, 0, False)], 1
    labels = {"winner": "winner", "hover": "{tok}", "hover_score": "{score}", "prompt": "prompt", "x": "x",
              "y": "y", "title": "t", "after_stop": "after", **{f"fate_{k}": k for k in (KEPT, "finished", "cut", "pruned")}}
    fig = tree_figure(rec, [f"t{r}" for r in range(20)], {}, 0, 0, labels)
    y = fig.layout.yaxis
    kept_y = sorted({v for tr in fig.data if tr.name == KEPT for v in tr.y}, reverse=True)
    assert len(kept_y) == 2
    assert (kept_y[0] - kept_y[1]) / (y.range[1] - y.range[0]) > 0.1    # a beam's row: over 1/10 of the plot (was 1/20)
    assert list(y.ticktext)[:2] == ["1", "2"] and "20" in y.ticktext and len(y.ticktext) <= 6
    tv = sorted(y.tickvals, reverse=True)
    assert all(a - b >= 0.9 for a, b in zip(tv, tv[1:]))                 # numbered ranks never crowd each other
