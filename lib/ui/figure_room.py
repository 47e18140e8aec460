"""How much room a figure's x axis and a legend below it take (issue 33, lib/ui/responsive.py):
Plotly places a legend below the plot at a fraction of the plot's height and turns long tick
labels on a narrow chart, so a fixed legend y lands on them; these estimate the axis's height
from its labels and move the legend under it.
"""
from __future__ import annotations

import math
import re

import plotly.graph_objects as go

LINE_PX = 16                       # a wrapped axis title line's height, px
LEGEND_ROW_PX = 19                 # a legend row below the plot, px


def _axes(fig: go.Figure, letter: str) -> list:
    return [fig.layout[k] for k in fig.layout if re.fullmatch(f"{letter}axis[0-9]*", k)]


def _legend_rows(fig: go.Figure) -> int:
    """Entries of a legend drawn below the plot, in a row that wraps or in a column (0 for any
    other legend): on a phone each long entry takes a row of its own."""
    leg = fig.layout.legend
    if leg.y is None or leg.y >= 0 or (leg.orientation != "h" and (leg.x or 0) >= 1) or fig.layout.showlegend is False:
        return 0
    return sum(1 for tr in fig.data if tr.showlegend is not False and tr.name)


TICK_CHAR_PX, TICK_LINE_PX = 6.5, 16     # a 12 px tick label's character width and its line height, px
PHONE_PLOT_PX = 300                      # a phone's plot width (390 px less the page's and the axes' margins)
MIN_PLOT_SHARE = 0.5                     # of a figure's height its plot keeps beside the axis and legend below
TURN_90_FONTS = 3.0                      # labels closer than this many font sizes are turned 90° by Plotly, not
                                         # 30° (plotly.js: 2.5; the plot is a little narrower than estimated)


def _tick_labels(fig: go.Figure, ax) -> list[str]:
    """The tick labels an x axis will show: its ticktext, else the category names of the traces
    drawn on it (bars and lines over tokens or hypotheses), else none (a numeric axis: Plotly
    picks few short labels)."""
    if ax.ticktext:
        return [str(t) for t in ax.ticktext]
    ref = "x" + ax.plotly_name[5:]
    names = []
    for tr in fig.data:
        if (getattr(tr, "xaxis", None) or "x") != ref or getattr(tr, "x", None) is None or tr.type == "heatmap":
            continue
        if getattr(tr, "orientation", None) == "h":
            continue
        xs = [x for x in tr.x if isinstance(x, str)]
        names += [x for x in xs if x not in names]
    return names


def x_axis_px(fig: go.Figure, plot_px: float = PHONE_PLOT_PX, char_px: float = TICK_CHAR_PX,
              line_px: int = LINE_PX) -> float:
    """Pixels under the plot that the lowest x axis takes: its tick labels (turned as Plotly
    turns them when they do not fit side by side in `plot_px` times the axis's share: 30° while
    each label has TURN_90_FONTS font sizes, else 90°) and its title's lines below them."""
    need = 0.0
    for ax in _axes(fig, "x"):
        if ax.showticklabels is False or ax.side == "top":
            continue
        d = ax.domain or (0, 1)
        labels = [re.sub(r"<[^>]+>", "", t) for t in _tick_labels(fig, ax)]
        room = plot_px * (d[1] - d[0]) / max(len(labels), 1)
        font = ax.tickfont.size or 12
        longest = max((len(t) for t in labels), default=0) * char_px * font / 12
        angle = ax.tickangle if isinstance(ax.tickangle, (int, float)) else (
            0 if longest <= room * 0.95 else 30 if room >= TURN_90_FONTS * font else 90)
        rad = math.radians(abs(angle))
        ticks = max(TICK_LINE_PX, longest * math.sin(rad) + TICK_LINE_PX * math.cos(rad)) + 6
        title = ax.title.text
        lines = (title.count("<br>") + 1) if title else 0
        need = max(need, ticks + lines * (line_px + 2) + (6 if lines else 0))
    return need


def legend_clear_of_axis(fig: go.Figure, plot_px: float = PHONE_PLOT_PX, char_px: float = TICK_CHAR_PX,
                         line_px: int = LINE_PX, row_px: int = LEGEND_ROW_PX, max_height: int = 700) -> None:
    """Move a legend below the plot (horizontal, y < 0 in paper units, anchored at its top) down
    so that its top lies under the x axis's tick labels, rotated or not, and the axis title
    (`x_axis_px`): its y is a fraction of the plot's height, which the tick labels and the
    legend themselves take from the figure (automargin), so a fixed y such as -0.25 lands on
    long category names Plotly turned 90° on a phone. Where the axis and legend would leave the
    plot less than MIN_PLOT_SHARE of the height, the figure grows (up to `max_height`)."""
    leg = fig.layout.legend
    if _legend_rows(fig) == 0 or (leg.yref or "paper") != "paper" \
            or (leg.yanchor or "top") != "top" or fig.layout.showlegend is False:
        return
    gap = x_axis_px(fig, plot_px, char_px, line_px) + 10
    rows = max(_legend_rows(fig), 1)
    height = fig.layout.height or 450
    edges = (fig.layout.margin.t or 0) + (fig.layout.margin.b or 0) + gap + row_px * rows
    if height - edges < MIN_PLOT_SHARE * height:         # long turned labels: the plot keeps half the height
        fig.update_layout(height=min(max_height, round(edges / (1 - MIN_PLOT_SHARE))))
    leg.y = min(leg.y, -gap / max((fig.layout.height or height) - edges, 80))


