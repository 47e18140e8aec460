"""Figures for the kv-quantization page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.concepts.plot_marks import significant_spec

CELL_FONT = 15       # heatmap cell text (px): readable on a projector


def channel_heatmap(kmax: np.ndarray, labels: dict) -> go.Figure:
    """max |k| per (layer, head_dim channel) over the cached tokens."""
    fig = go.Figure(go.Heatmap(z=kmax, colorscale="Viridis", colorbar=dict(title="max|k|"),
                               hovertemplate=labels["hover"] + "<extra></extra>"))
    fig.update_layout(title=labels["title"], xaxis_title=labels["x"], yaxis_title=labels["y"], height=380)
    return fig


def cell_text(value: float, fmt=format) -> str:
    """A heatmap cell's number, short enough for a third of a phone-wide subplot (at most 6
    characters: "0.18", "0.0012", "3.4e-5", "1,234"), written by fmt(value, spec) (the page's
    number format: "0,18" in Indonesian), two significant digits alike in every cell ("0.10",
    "1.0"). The full value goes in the hover text."""
    a = abs(float(value))
    if a == 0 or not np.isfinite(a):
        return fmt(float(value), "g")
    if 100 <= a < 1e5:
        return fmt(float(value), ",.0f")
    if 0.001 <= a < 100:      # two significant digits, trailing zeros kept: 0.10 beside 0.18, not 0.1
        return fmt(float(value), significant_spec(a))
    mant, exp = f"{float(value):.1e}".split("e")
    return fmt(float(mant), ".1f") + "e" + str(int(exp))


def grid_figure(bits: list[int], grans: list[str], metrics: list[tuple[str, np.ndarray, str]], title: str,
                fmt=format) -> go.Figure:
    """One small heatmap per error metric: rows = bits, columns = scale choices; each cell says
    its value in short (`cell_text`: 2 significant digits, so neighbouring cells never run into
    one another) and the hover in full, fmt(value, spec) (the page's number format); colour =
    log10 of the value."""
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=[m[0] for m in metrics], horizontal_spacing=0.06)
    for i, (_, z, spec) in enumerate(metrics, 1):
        text = [[cell_text(v, fmt) for v in row] for row in z]
        full = [[fmt(float(v), spec) for v in row] for row in z]
        fig.add_trace(go.Heatmap(z=np.log10(np.maximum(z, 1e-9)), x=grans, y=[f"int{b}" for b in bits], text=text,
                                 customdata=full, texttemplate="%{text}", textfont=dict(size=CELL_FONT),
                                 colorscale="Reds", showscale=False,
                                 hovertemplate="%{y} %{x}: %{customdata}<extra></extra>"), row=1, col=i)
        fig.update_yaxes(autorange="reversed", row=1, col=i)
    fig.update_layout(title=title, height=360)
    return fig


def memory_figure(names: list[str], stored: list[float], full: float, half: float, labels: dict) -> go.Figure:
    """Bars: the storage each cache format allocated, with the float32 and float16 sizes as lines."""
    fig = go.Figure(go.Bar(x=names, y=stored, marker_color="#4C78A8", name=labels["stored"],
                           hovertemplate="%{x}: %{y:,.1f}<extra></extra>"))
    fig.add_hline(y=full, line_dash="dot", annotation_text=labels["full"], annotation_position="top left")
    fig.add_hline(y=half, line_dash="dash", annotation_text=labels["half"], annotation_position="top left")
    fig.update_layout(title=labels["title"], yaxis_title=labels["y"], height=380)
    return fig
