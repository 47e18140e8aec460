"""lib/ui/responsive.py: the figure a page draws fits a phone and a projector (issue 33)."""
from __future__ import annotations

import plotly.graph_objects as go

from lib.ui import responsive


def _fig(**layout) -> go.Figure:
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4], name="a", mode="markers+text", text=["x", "y"],
                               textfont=dict(size=10)))
    fig.add_scatter(x=[1, 2], y=[4, 3], name="b")
    fig.update_layout(**layout)
    return fig


def test_the_title_leaves_plotly_for_a_wrapping_html_line_and_stays_in_the_download():
    fig = _fig(title="Where “␣is” looks <it> at<br>layer <b>5</b>", height=420)
    shown, title = responsive.shown_figure(fig)
    assert shown.layout.title.text is None                    # nothing Plotly could cut off
    assert title == ('<div class="fig-title">Where “␣is” looks &lt;it&gt; at<br>layer <b>5</b></div>')
    assert fig.layout.title.text.startswith("Where")          # the figure itself (the download) keeps it


def test_a_legend_at_the_right_moves_below_and_one_placed_below_stays():
    shown, _ = responsive.shown_figure(_fig())                # Plotly's default: a column at the right
    assert shown.layout.legend.orientation == "h" and shown.layout.legend.y < 0
    placed = dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right")
    shown, _ = responsive.shown_figure(_fig(legend=placed))
    assert shown.layout.legend.y == 1.02 and shown.layout.margin.t >= 30     # room above for it
    shown, _ = responsive.shown_figure(_fig(legend=dict(orientation="v", x=1.02, y=1)))
    assert shown.layout.legend.orientation == "h"


def test_the_top_margin_the_title_needed_is_given_back_but_a_figures_own_stays():
    assert responsive.shown_figure(_fig(margin=dict(t=90)))[0].layout.margin.t == 12
    assert responsive.shown_figure(_fig(margin=dict(t=90)), own_top=60)[0].layout.margin.t == 60


def test_presenter_view_enlarges_the_chart_not_only_the_page_text():
    fig = _fig(height=900)
    fig.add_annotation(x=1, y=3, text="label", font=dict(size=11))
    shown, _ = responsive.shown_figure(fig, present=True)
    assert shown.layout.font.size == responsive.PRESENT_FONT
    assert shown.layout.hoverlabel.font.size == responsive.PRESENT_FONT
    assert shown.layout.legend.font.size == responsive.PRESENT_FONT
    assert shown.data[0].textfont.size == 13 and shown.layout.annotations[0].font.size == 14     # x 1.3
    assert shown.layout.xaxis.tickfont.size == responsive.PRESENT_TICK       # Streamlit's theme would keep ~12
    assert shown.layout.yaxis.title.font.size == responsive.PRESENT_FONT
    assert shown.layout.height == responsive.PRESENT_HEIGHT[1]          # fits a 720 px screen
    assert fig.layout.height == 900 and fig.data[0].textfont.size == 10  # the download is untouched
    m = shown.layout.margin
    plot_px = shown.layout.height - (m.t or 0) - (m.b or 0) - responsive.X_AXIS_PX
    assert abs(-shown.layout.legend.y * plot_px - responsive.LEGEND_GAP_PX) < 1e-6    # below the larger axis title
    assert responsive.shown_figure(_fig(height=300), present=True)[0].layout.height == responsive.PRESENT_HEIGHT[0]


def test_titles_a_phone_would_cut_are_wrapped_per_panel_and_the_top_margin_grows():
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=["Gemma 3's own layout (512 local : global)", "short"])
    fig.add_scatter(x=[1], y=[1], row=1, col=1)
    fig.add_scatter(x=[1], y=[1], row=1, col=2)
    fig.update_xaxes(title_text="position in the context (token)")
    fig.update_yaxes(title_text="−score = −Σ log p / L^α (log scale, reversed: up is better)", row=1, col=1)
    fig.update_layout(height=300)
    shown, _ = responsive.shown_figure(fig)
    left, right = shown.layout.annotations
    assert "<br>" in left.text and right.text == "short"            # the half-width panel's long title
    assert all(len(line) <= responsive.PHONE_CHARS // 2 for line in left.text.split("<br>"))
    assert "<br>" in shown.layout.xaxis.title.text and "<br>" in shown.layout.yaxis.title.text
    assert shown.layout.margin.t >= 34 + responsive.LINE_PX                   # room for the second line
    assert fig.layout.annotations[0].text.startswith("Gemma") and "<br>" not in fig.layout.annotations[0].text


def test_a_long_legend_below_gets_the_height_it_needs_instead_of_a_scrollbar():
    fig = go.Figure([go.Scatter(x=[1], y=[i], name=f"hypothesis {i} of the beam") for i in range(9)])
    fig.update_layout(height=400)
    shown, _ = responsive.shown_figure(fig)
    assert shown.layout.height == 400 + responsive.LEGEND_ROW_PX * (9 - responsive.LEGEND_ROWS)
    assert shown.layout.legend.maxheight == 0.9
    assert responsive.shown_figure(_fig(height=400))[0].layout.height == 400      # two entries: as it was


def test_three_panels_or_two_heatmaps_side_by_side_keep_their_width_on_a_phone():
    from plotly.subplots import make_subplots

    assert responsive.needs_width(make_subplots(rows=1, cols=4))
    assert not responsive.needs_width(make_subplots(rows=1, cols=2))
    maps = make_subplots(rows=1, cols=2)
    maps.add_heatmap(z=[[1, 2]], row=1, col=1)
    assert responsive.needs_width(maps)                                  # two token-labelled maps
    assert not responsive.needs_width(make_subplots(rows=3, cols=1))
    assert not responsive.needs_width(make_subplots(specs=[[{"secondary_y": True}]]))
    assert not responsive.needs_width(_fig())


def test_presenter_view_gives_wrapped_panel_titles_room_at_the_projectors_font():
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=4, subplot_titles=[f"query head {h} → K/V head 0" for h in range(4)])
    shown, _ = responsive.shown_figure(fig, present=True)
    lines = max(a.text.count("<br>") for a in shown.layout.annotations)
    assert lines == 1 and shown.layout.annotations[0].font.size >= responsive.PRESENT_FONT     # 16 x 1.3
    assert shown.layout.margin.t >= 34 + (responsive.PRESENT_FONT + 6) * lines    # both lines inside the figure


def test_a_legend_below_moves_down_when_the_x_axis_title_takes_two_lines():
    fig = _fig(legend=dict(orientation="h", y=-0.22, yanchor="top"), height=380,
               xaxis_title="token baru dalam satu forward pass (skala log, tebal)")
    shown, _ = responsive.shown_figure(fig)
    assert "<br>" in shown.layout.xaxis.title.text and shown.layout.legend.y < -0.22
    short, _ = responsive.shown_figure(_fig(legend=dict(orientation="h", y=-0.22, yanchor="top"), xaxis_title="rank"))
    assert short.layout.legend.y == -0.22


def test_a_legend_below_clears_category_names_plotly_turns_on_a_phone():
    """beam-search's probability chart: long hypotheses on the x axis are turned (30°, 90°) on
    a phone; the legend Plotly would put at y = -0.25 (of the plot's height) lands on them."""
    from lib.concepts.beam_search.figures import probability_figure

    names = [f"#{i}: ␣Paris, the capital of France, is" for i in range(4)]
    fig = probability_figure(names, [1e-3, 1e-4, 1e-5, 1e-6], [1e-2, 1e-3, 1e-4, 1e-5],
                             {"p": "e^S", "q": "e^score", "y": "probability", "title": "t"})
    shown, _ = responsive.shown_figure(fig)
    leg, m = shown.layout.legend, shown.layout.margin
    rows = responsive._legend_rows(shown)
    below = responsive.x_axis_px(shown)                  # px the axis takes under the plot (automargin)
    plot_h = shown.layout.height - m.t - (m.b or 0) - below - responsive.LEGEND_ROW_PX * rows
    turned = len(names[0]) * responsive.TICK_CHAR_PX * 0.5             # the names, turned 30° at least
    gap = -leg.y * plot_h                                              # px from the plot to the legend's top
    assert gap >= turned, (leg.y, gap, turned)
    assert responsive.x_axis_px(shown) >= turned
    nine = probability_figure([f"#{i} L=10 “one of the most beautiful cities”" for i in range(9)], [1e-3] * 9,
                              [1e-2] * 9, {"p": "e^S", "q": "e^score", "y": "probability", "title": "t"})
    shown, _ = responsive.shown_figure(nine)                       # 9 names on ~300 px: Plotly turns them 90°
    assert responsive.x_axis_px(shown) >= len(nine.data[0].x[0]) * responsive.TICK_CHAR_PX
    few = responsive.shown_figure(_fig(xaxis_title="rank", legend=dict(orientation="h", y=-0.22, yanchor="top")))[0]
    assert few.layout.legend.y == -0.22                                 # short numeric ticks: as the figure put it


def test_a_line_label_above_the_plot_gets_a_top_margin_instead_of_being_cut():
    """sliding-window's fact chart: add_vline(annotation_position="top") writes "W = 64" above
    the plot in the y axis's domain units; with the title moved out, a 12 px margin cut it."""
    from lib.concepts.sliding_window.figures import fact_figure

    fig = fact_figure([20, 32, 56, 72, 128, 192], {"dense": [0.5] * 6}, 1e-7, {"W = 64": 64},
                      {"title": "t", "x": "d", "y": "p", "control": "no fact"})
    shown, _ = responsive.shown_figure(fig)
    assert shown.layout.margin.t >= 30
    inside = _fig()
    inside.add_vline(x=1, annotation_text="inside", annotation_position="top left")    # y = 1, anchored at its top
    assert responsive.shown_figure(inside)[0].layout.margin.t == 12


def test_bar_labels_are_drawn_at_one_readable_size_not_shrunk_to_the_bar():
    """Issue 33 re-look: top-k-top-p's 16 nucleus bars on a phone printed '136', '208' at ~7 px
    (Plotly shrinks a label to its bar) beside '16' at 12 px."""
    import plotly.graph_objects as go

    fig = go.Figure(go.Bar(x=list(range(16)), y=[136, 8, 208] + [10] * 13, text=["136", "8", "208"] + ["10"] * 13,
                           textposition="outside"))
    shown, _ = responsive.shown_figure(fig)
    assert shown.layout.uniformtext.minsize >= 10 and shown.layout.uniformtext.mode == "show"
    own = go.Figure(go.Bar(x=[1], y=[1], text=["a"]), layout=dict(uniformtext=dict(minsize=12, mode="hide")))
    assert responsive.shown_figure(own)[0].layout.uniformtext.minsize == 12            # a figure's own stays
    plain = go.Figure(go.Bar(x=[1], y=[1]))
    assert responsive.shown_figure(plain)[0].layout.uniformtext.minsize is None         # no labels: untouched


def test_an_x_axis_title_a_phone_holds_is_not_wrapped_anywhere():
    """Issue 33 re-look: chunked-prefill's "token baru dalam satu forward (skala log)" (41
    characters, ~250 px at 14 px on a phone's ~300 px plot) was wrapped before "log)" on every
    screen, the desktop's too (the server cannot tell the width). A title a phone holds stays
    one line; a longer one is still wrapped."""
    fits = "token baru dalam satu forward (skala log)"
    shown, _ = responsive.shown_figure(_fig(xaxis_title=fits))
    assert shown.layout.xaxis.title.text == fits
    long = "token baru dalam satu forward pass (skala log, tebal)"
    assert "<br>" in responsive.shown_figure(_fig(xaxis_title=long))[0].layout.xaxis.title.text
