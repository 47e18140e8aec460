"""Figures for the model-memory page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import textwrap

import plotly.graph_objects as go

from lib.concepts.plot_marks import decade_axis

MB = 1e6
LEGEND = dict(orientation="h", y=-0.22, yanchor="top", x=0, xanchor="left")
BAR_LABEL_CHARS = 22    # long bar names wrap onto lines of this width instead of turning sideways
ROW_LABEL_CHARS = 44    # characters of bar names side by side that fit under a phone's ~330 px chart


def wrap_label(text: str, width: int = BAR_LABEL_CHARS) -> str:
    """A category label broken onto lines of at most `width` characters (Plotly's <br>), so a
    bar chart at 1,280 px keeps its labels horizontal and whole."""
    return "<br>".join(textwrap.wrap(text, width)) or text


def file_figure(types: list[str], bytes_: list[float], params: list[float], labels: dict, fmt=format) -> go.Figure:
    """Bars: bytes of the GGUF file per tensor type, with bits per weight in the hover (bar
    labels written by `fmt(value, spec)`, the page language's number writer)."""
    bpw = [8 * b / p if p else 0 for b, p in zip(bytes_, params)]
    fig = go.Figure(go.Bar(x=types, y=[b / MB for b in bytes_], customdata=list(zip(params, bpw)),
                           text=[fmt(b / MB, ",.1f") + " MB" for b in bytes_], textposition="outside",
                           hovertemplate="%{x}: %{y:.1f} MB, %{customdata[0]:,} " + labels["params"]
                           + ", %{customdata[1]:.2f} " + labels["bpw"] + "<extra></extra>"))
    fig.update_layout(title=labels["title"], yaxis_title="MB", height=360)
    return fig


def stack_figure(bars: list[str], parts: list[tuple[str, list[float]]], line: float | None, labels: dict) -> go.Figure:
    """Stacked bars of memory components (MB); an optional horizontal line (a device's RAM).
    Bar names are wrapped (`wrap_label`), never rotated, narrower the more bars share the
    width (ROW_LABEL_CHARS over all of them: a phone's four labels do not print into one another)."""
    fig = go.Figure()
    shown = [wrap_label(b, max(10, min(BAR_LABEL_CHARS, ROW_LABEL_CHARS // len(bars)))) for b in bars]
    for name, vals in parts:
        fig.add_bar(x=shown, y=[v / MB for v in vals], name=name,
                    hovertemplate=name + ": %{y:.1f} MB<extra></extra>")
    if line:
        fig.add_hline(y=line / MB, line_dash="dash", line_color="#d62728", annotation_text=labels["line"],
                      annotation_position="top left")
    fig.update_xaxes(tickangle=0)
    fig.update_layout(title=labels["title"], barmode="stack", yaxis_title="MB", height=500, legend=LEGEND)
    return fig


def kv_figure(ctx: list[int], full: list[float], window: list[float], meas: dict[str, tuple[list, list]],
              chosen: int, labels: dict, fmt=format) -> go.Figure:
    """Predicted KV bytes against context (lines, log-log) with the measured points on top
    (decades written by `fmt(value, spec)`, the page language's number writer)."""
    fig = go.Figure()
    fig.add_scatter(x=ctx, y=[v / MB for v in full], mode="lines", name=labels["full"], line=dict(color="#1f77b4"))
    fig.add_scatter(x=ctx, y=[v / MB for v in window], mode="lines", name=labels["window"], line=dict(color="#2ca02c"))
    colors = {"full": "#1f77b4", "window": "#2ca02c"}
    for kind, (xs, ys) in meas.items():
        fig.add_scatter(x=xs, y=[v / MB for v in ys], mode="markers", name=labels[f"meas_{kind}"],
                        marker=dict(size=11, symbol="x", color=colors[kind]))
    fig.add_vline(x=chosen, line_dash="dot", line_color="grey")
    fig.update_xaxes(title_text=labels["x"])
    fig.update_yaxes(title_text=labels["y"])
    decade_axis(fig, "x", [ctx, chosen], fmt)
    decade_axis(fig, "y", [[v / MB for v in full], [v / MB for v in window]] + [[v / MB for v in ys] for _, ys in meas.values()], fmt)
    fig.update_layout(title=labels["title"], height=480, legend=LEGEND)
    return fig
