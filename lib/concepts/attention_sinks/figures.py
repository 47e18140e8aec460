"""Figures for the attention-sinks page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from lib.concepts.plot_marks import decade_axis

LEGEND = dict(orientation="h", y=-0.18, yanchor="top", x=0, xanchor="left")  # below the plot: titles stay readable


def mass_heatmap(per_head: np.ndarray, layer_names: list[str], labels: dict[str, str]) -> go.Figure:
    """(L, H) share of attention on the first positions: rows = layers, columns = heads."""
    L, H = per_head.shape
    fig = go.Figure(go.Heatmap(z=per_head, x=[f"{labels['head']} {h}" for h in range(H)], y=layer_names,
                               zmin=0, zmax=1, colorscale="Viridis",
                               texttemplate="%{z:.2f}", colorbar=dict(title=labels["share"]),
                               hovertemplate="%{y}, %{x}: %{z:.3f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(title=labels["title"], height=560)
    return fig


def position_figure(mass: np.ndarray, uniform: np.ndarray, layer_names: list[str], labels: dict[str, str]) -> go.Figure:
    """Stacked bars per layer: share on each of the first positions (heads averaged), and
    what even attention would give."""
    fig = go.Figure()
    per_pos = mass.mean(1)                                           # (L, first)
    for j in range(per_pos.shape[1]):
        fig.add_bar(x=layer_names, y=per_pos[:, j], name=f"{labels['pos']} {j}")
    fig.add_scatter(x=layer_names, y=uniform, name=labels["uniform"], mode="markers",
                    marker=dict(symbol="line-ew-open", size=18, color="black"))
    fig.update_layout(title=labels["title"], barmode="stack", height=400, legend=LEGEND,
                      yaxis_title=labels["share"])
    return fig


def curves_figure(series: dict[str, tuple[np.ndarray, np.ndarray]], window: int, labels: dict[str, str],
                  log_y: bool = True, fmt=format) -> go.Figure:
    """One line per policy: (x positions, y values); a log y axis labels decades (or round
    values) written by `fmt(value, spec)`, the page language's number writer."""
    fig = go.Figure()
    for name, (x, y) in series.items():
        fig.add_scatter(x=x, y=y, name=name, mode="lines",
                        hovertemplate="t = %{x:,}: %{y:,.3f}<extra>" + name + "</extra>")
    fig.add_vline(x=window, line_dash="dash", line_color="#c44", annotation_text=labels["window"],
                  annotation_position="top right")
    last = max((float(np.max(x)) for x, _ in series.values() if len(x)), default=window)
    fig.update_xaxes(title_text=labels["x"], range=[0, max(last, window)])     # positions start at 0
    fig.update_yaxes(title_text=labels["y"])
    if log_y:
        decade_axis(fig, "y", [y for _, y in series.values()], fmt)
    fig.update_layout(title=labels["title"], height=480, legend=LEGEND)
    return fig
