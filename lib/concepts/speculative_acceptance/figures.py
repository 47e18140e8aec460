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
                 u: list[float | None], outcome: list[str], labels: dict[str, str], fmt=format) -> go.Figure:
    """A drafted block: p(d_i), q(d_i) and min(1, p/q) at each position (the verify forward
    scored them all at once), and the uniform draw u of every position verified so far (None =
    not reached yet) with its verdict. Hover numbers are written by `fmt(value, spec)`."""
    fig = go.Figure()
    fig.add_bar(x=positions, y=q, name=labels["q"], marker_color="#9ecae1",
                text=[fmt(v, ".3f") for v in q], hovertemplate="%{x}: %{text}<extra>" + labels["q"] + "</extra>")
    fig.add_bar(x=positions, y=p, name=labels["p"], marker_color="#3182bd",
                text=[fmt(v, ".3f") for v in p], hovertemplate="%{x}: %{text}<extra>" + labels["p"] + "</extra>")
    fig.update_traces(textposition="none")
    fig.add_scatter(x=positions, y=accept, name=labels["accept"], mode="markers",
                    marker=dict(size=16, symbol="diamond", color="#e6550d"),
                    text=[fmt(v, ".3f") for v in accept], hovertemplate="%{x}: %{text}<extra>" + labels["accept"] + "</extra>")
    xs = [x for x, v in zip(positions, u) if v is not None]
    us = [v for v in u if v is not None]
    fig.add_scatter(x=xs, y=us, name=labels["u"], mode="markers+text", text=[o for o, v in zip(outcome, u) if v is not None],
                    textposition="middle right", textfont=dict(size=22),
                    customdata=[fmt(v, ".3f") for v in us], hovertemplate="%{x}: u = %{customdata}<extra></extra>",
                    marker=dict(size=16, symbol="x", color="#000000"))
    fig.update_yaxes(title_text=labels["y"], range=[0, 1.1])
    fig.update_layout(title=labels["title"], barmode="group", height=460, legend=LEGEND)
    return fig
