"""Labels of reference lines on log axes sit at the line, not at 10^value; log axes label
decades (or a few round values in full), in the page language."""
import math

import numpy as np
import pytest
import plotly.graph_objects as go

from lib.concepts.plot_marks import MAX_DECADE_TICKS, decade_axis, decade_ticks, log_x_vline, log_y_hline


def test_labels_are_placed_in_log10_units():
    fig = go.Figure(go.Scatter(x=[0.1, 10], y=[1, 1000]))
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    log_x_vline(fig, 2.0, "T = 2", line_dash="dot")
    log_y_hline(fig, 4096, "context", line_dash="dot")
    vx, hy = fig.layout.annotations
    assert fig.layout.shapes[0].x0 == 2.0 and math.isclose(vx.x, math.log10(2.0))
    assert fig.layout.shapes[1].y0 == 4096 and math.isclose(hy.y, math.log10(4096))


def _log10s(vals):
    return [math.log10(v) for v in vals]


def test_decade_axis_ticks_only_powers_of_ten():
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[3e-7, 0.02, 4.0]))
    decade_axis(fig, "y", [[3e-7, 0.02], np.array([4.0])])
    ax = fig.layout.yaxis
    assert ax.type == "log" and ax.exponentformat == "power" and ax.tickmode == "array"
    assert all(math.isclose(k, round(k), abs_tol=1e-9) for k in _log10s(ax.tickvals))
    assert min(ax.tickvals) <= 3e-7 and max(ax.tickvals) >= 4.0          # the ticks cover the data
    assert "10<sup>−6</sup>" in ax.ticktext and not any("µ" in s or "e-" in s for s in ax.ticktext)
    assert fig.layout.xaxis.type is None                                # the other axis untouched


def test_decade_axis_many_decades_thinned_but_still_powers():
    vals, text = decade_ticks([1e-30, 1.0])
    assert 2 <= len(vals) <= MAX_DECADE_TICKS
    assert all(math.isclose(k, round(k), abs_tol=1e-9) for k in _log10s(vals))


def test_decade_axis_in_full_when_decades_are_few():
    vals, text = decade_ticks([3, 40, 2500])
    assert vals == [1.0, 10.0, 100.0, 1000.0, 10000.0]
    assert text == ["1", "10", "100", "1,000", "10,000"]


def test_narrow_range_gets_round_values_in_full():
    vals, text = decade_ticks([12.0, 95.0])                               # less than one decade
    assert len(vals) >= 3 and text == ["20", "30", "50"]
    vals, text = decade_ticks([15.0, 600.0])                              # less than two decades
    assert text == ["20", "50", "100", "200", "500"]


def test_labels_follow_the_page_language():
    indonesian = lambda x, spec="": format(x, spec).translate(str.maketrans({",": ".", ".": ","}))
    assert decade_ticks([0.2, 0.9], indonesian)[1] == ["0,2", "0,3", "0,5"]
    assert decade_ticks([5, 30000], indonesian)[1][-1] == "100.000"


def test_subplot_axis_and_nothing_to_tick():
    from plotly.subplots import make_subplots
    fig = make_subplots(rows=2, cols=1)
    fig.add_scatter(x=[1, 2], y=[1, 1000], row=1, col=1)
    decade_axis(fig, "y", [1, 1000], row=1, col=1)
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type is None
    decade_axis(fig, "y", [0, float("nan")], row=2, col=1)                # no positive value: log, no ticks
    assert fig.layout.yaxis2.type == "log" and fig.layout.yaxis2.tickvals is None


def test_two_decades_with_only_two_powers_inside_get_round_values():
    vals, text = decade_ticks([0.0017, 0.2])                              # 10^-2 and 10^-1 only
    assert text == ["0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2"]


def test_long_titles_wrap_short_and_marked_up_ones_stay():
    from lib.concepts.plot_marks import wrap_title
    long = "word " * 40
    fig = go.Figure(layout=dict(title=long.strip()))
    lines = wrap_title(fig, 60)
    assert lines >= 3 and all(len(line) <= 60 for line in fig.layout.title.text.split("<br>"))
    fig = go.Figure(layout=dict(title="<b>bold</b> " + long))
    assert wrap_title(fig, 60) == 1 and "<br>" not in fig.layout.title.text
    assert wrap_title(go.Figure(layout=dict(title="short")), 60) == 1 and wrap_title(go.Figure()) == 0


def test_label_rows_stack_labels_that_would_overlap():
    from lib.concepts.plot_marks import label_rows

    # flips at -0.06, 0.40, 0.42 and 0.52 of a span of 4 are closer than 30 % of it: four rows
    assert label_rows([-0.06, 0.40, 0.42, 0.52, 1.26], 4.0) == [0, 1, 2, 3, 0]
    assert label_rows([0.0, 1.5, 3.0], 4.0) == [0, 0, 0]      # far apart: one row
    assert label_rows([], 4.0) == []
    assert label_rows([2.0, 0.0, 2.1], 4.0) == [0, 0, 1]      # order of the input does not matter


def test_model_checks_error_axis_writes_one_style_of_tick():
    """Issue 33 re-look: model-check's log axis read "100µ", "1µ" beside "0,01" (Plotly's SI
    suffixes and decimals on one axis). Its ticks are set: powers of ten (10⁻⁶ … 10⁻²), no SI."""
    from lib.concepts.model_check.figures import layer_errors
    from lib.ui.i18n import format_number

    rel = [3e-6 * (1 + i) for i in range(17)] + [2e-3]
    for lang in ("en", "id"):
        fig = layer_errors(range(18), rel, ["sliding_attention"] * 18, 1e-2, dict(title="t", x="x", y="y", tol="tol"),
                           lambda v, spec="": format_number(v, spec, lang))
        y = fig.layout.yaxis
        assert y.type == "log" and y.tickmode == "array", lang
        assert list(y.ticktext) == [f"10<sup>−{k}</sup>" for k in (6, 5, 4, 3, 2)], y.ticktext
        assert not any(s in "".join(y.ticktext) for s in ("µ", "m", "0,0", "0.0", "-")), y.ticktext
        (label,) = [a for a in fig.layout.annotations if a.text == "tol"]
        assert label.y == pytest.approx(-2)                 # the tolerance's label at its line (log10 units), not at 10^0.01
