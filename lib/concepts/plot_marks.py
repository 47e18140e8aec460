"""Labelled reference lines on log-scale axes.

Plotly's `add_vline` / `add_hline(annotation_text=...)` place the label at the line's value in
the axis's own units, which on a log axis are log10 units: the label of a line at 2 lands at
10^2 = 100, and one at 4,096 falls off the chart. These draw the line the usual way and put
the label at log10(value)."""
from __future__ import annotations

import math

import plotly.graph_objects as go


def log_x_vline(fig: go.Figure, x: float, text: str, bottom: bool = False, **line) -> None:
    """A vertical line at x on a log x axis, labelled at its top (or foot)."""
    fig.add_vline(x=x, **line)
    fig.add_annotation(x=math.log10(x), xref="x", y=0 if bottom else 1, yref="paper", text=text,
                       showarrow=False, xanchor="left", yanchor="bottom",
                       font=dict(size=11, color=line.get("line_color", "grey")))


def log_y_hline(fig: go.Figure, y: float, text: str, **line) -> None:
    """A horizontal line at y on a log y axis, labelled above its right end."""
    fig.add_hline(y=y, **line)
    fig.add_annotation(y=math.log10(y), yref="y", x=1, xref="paper", text=text, showarrow=False,
                       xanchor="right", yanchor="bottom", font=dict(size=11, color=line.get("line_color", "grey")))
