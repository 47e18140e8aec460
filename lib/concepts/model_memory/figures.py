"""Figures for the model-memory page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import plotly.graph_objects as go

MB = 1e6
LEGEND = dict(orientation="h", y=-0.22, yanchor="top", x=0, xanchor="left")


def file_figure(types: list[str], bytes_: list[float], params: list[float], labels: dict) -> go.Figure:
    """Bars: bytes of the GGUF file per tensor type, with bits per weight in the hover."""
    bpw = [8 * b / p if p else 0 for b, p in zip(bytes_, params)]
    fig = go.Figure(go.Bar(x=types, y=[b / MB for b in bytes_], customdata=list(zip(params, bpw)),
                           text=[f"{b / MB:.1f} MB" for b in bytes_], textposition="outside",
                           hovertemplate="%{x}: %{y:.1f} MB, %{customdata[0]:,} " + labels["params"]
                           + ", %{customdata[1]:.2f} " + labels["bpw"] + "<extra></extra>"))
    fig.update_layout(title=labels["title"], yaxis_title="MB", height=360)
    return fig


def stack_figure(bars: list[str], parts: list[tuple[str, list[float]]], line: float | None, labels: dict) -> go.Figure:
    """Stacked bars of memory components (MB); an optional horizontal line (a device's RAM)."""
    fig = go.Figure()
    for name, vals in parts:
        fig.add_bar(x=bars, y=[v / MB for v in vals], name=name,
                    hovertemplate=name + ": %{y:.1f} MB<extra></extra>")
    if line:
        fig.add_hline(y=line / MB, line_dash="dash", line_color="#d62728", annotation_text=labels["line"],
                      annotation_position="top left")
    fig.update_layout(title=labels["title"], barmode="stack", yaxis_title="MB", height=480, legend=LEGEND)
    return fig


def kv_figure(ctx: list[int], full: list[float], window: list[float], meas: dict[str, tuple[list, list]],
              chosen: int, labels: dict) -> go.Figure:
    """Predicted KV bytes against context (lines, log x) with the measured points on top."""
    fig = go.Figure()
    fig.add_scatter(x=ctx, y=[v / MB for v in full], mode="lines", name=labels["full"], line=dict(color="#1f77b4"))
    fig.add_scatter(x=ctx, y=[v / MB for v in window], mode="lines", name=labels["window"], line=dict(color="#2ca02c"))
    colors = {"full": "#1f77b4", "window": "#2ca02c"}
    for kind, (xs, ys) in meas.items():
        fig.add_scatter(x=xs, y=[v / MB for v in ys], mode="markers", name=labels[f"meas_{kind}"],
                        marker=dict(size=11, symbol="x", color=colors[kind]))
    fig.add_vline(x=chosen, line_dash="dot", line_color="grey")
    fig.update_xaxes(type="log", title_text=labels["x"])
    fig.update_yaxes(type="log", title_text=labels["y"])
    fig.update_layout(title=labels["title"], height=480, legend=LEGEND)
    return fig
