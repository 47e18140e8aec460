"""Figures for the two speculative-decoding pages (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import plotly.graph_objects as go

LEGEND = dict(orientation="h", y=-0.22, yanchor="top", x=0, xanchor="left")  # under the plot: long titles stay readable


def bars_figure(categories: list[str], series: dict[str, list[float]], title: str, y_label: str,
                colors: dict[str, str] | None = None, height: int = 440) -> go.Figure:
    """Grouped bars: one bar per series for every category (token, position, ...)."""
    fig = go.Figure()
    for name, ys in series.items():
        fig.add_bar(x=categories, y=list(ys), name=name, marker_color=(colors or {}).get(name),
                    hovertemplate="%{x}: %{y:.4f}<extra>" + name + "</extra>")
    fig.update_layout(title=title, barmode="group", yaxis_title=y_label, height=height, legend=LEGEND)
    return fig


def alpha_by_layer_figure(ks: list[int], alphas: list[float], chosen: int, labels: dict[str, str]) -> go.Figure:
    """Acceptance probability of the early-exit draft against how many layers it keeps."""
    fig = go.Figure()
    fig.add_scatter(x=ks, y=alphas, mode="lines+markers", name=labels["alpha"],
                    hovertemplate="k = %{x}: α = %{y:.3f}<extra></extra>")
    fig.add_vline(x=chosen, line_dash="dot", line_color="grey")
    fig.update_xaxes(title_text=labels["x"], dtick=1)
    fig.update_yaxes(title_text=labels["alpha"], range=[0, 1.02])
    fig.update_layout(title=labels["title"], height=340, showlegend=False)
    return fig


def block_figure(positions: list[str], p: list[float], q: list[float], accept: list[float],
                 outcome: list[str], labels: dict[str, str]) -> go.Figure:
    """A drafted block: p(d_i), q(d_i) and min(1, p/q) at each position, with the verdict."""
    fig = go.Figure()
    fig.add_bar(x=positions, y=q, name=labels["q"], marker_color="#9ecae1")
    fig.add_bar(x=positions, y=p, name=labels["p"], marker_color="#3182bd")
    fig.add_scatter(x=positions, y=accept, name=labels["accept"], mode="markers+text", text=outcome,
                    textposition="top center", marker=dict(size=12, symbol="diamond", color="#e6550d"))
    fig.update_yaxes(title_text=labels["y"], range=[0, 1.18])
    fig.update_layout(title=labels["title"], barmode="group", height=440, legend=LEGEND)
    return fig


def speed_figure(gammas: list[int], lines: dict[str, list[float]], points: dict[str, list[float]],
                 labels: dict[str, str], y_ref: float | None = 1.0) -> go.Figure:
    """Predicted curves (lines) and measured values (markers) against the block length gamma."""
    fig = go.Figure()
    palette = ["#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363", "#fd8d3c"]
    for i, (name, ys) in enumerate(lines.items()):
        fig.add_scatter(x=gammas, y=ys, mode="lines", name=name,
                        line=dict(color=palette[i // 2 % len(palette)], dash="solid" if i % 2 == 0 else "dot"))
    for i, (name, ys) in enumerate(points.items()):
        fig.add_scatter(x=gammas, y=ys, mode="markers", name=name,
                        marker=dict(size=11, color=palette[i % len(palette)], symbol="circle"))
    if y_ref is not None:
        fig.add_hline(y=y_ref, line_dash="dash", line_color="grey")
    fig.update_xaxes(title_text=labels["x"], dtick=1)
    fig.update_yaxes(title_text=labels["y"], rangemode="tozero")
    fig.update_layout(title=labels["title"], height=440, legend=LEGEND)
    return fig
