"""Figures for the sliding-window page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.concepts.plot_marks import decade_axis, log_y_hline

LEGEND = dict(orientation="h", y=-0.18, yanchor="top", x=0, xanchor="left")  # below the plot: titles stay readable


def visibility_figure(maps: dict[str, np.ndarray], layer_names: list[str], labels: dict[str, str]) -> go.Figure:
    """One heatmap per layout: rows = layers, columns = positions 0..t, dark = readable."""
    fig = make_subplots(rows=1, cols=len(maps), subplot_titles=list(maps), shared_yaxes=True,
                        horizontal_spacing=0.04)
    for i, (name, m) in enumerate(maps.items(), 1):
        m = np.asarray(m, dtype=float)
        fig.add_heatmap(z=m, y=layer_names, x=np.arange(m.shape[1]), colorscale=[[0, "#f2f2f2"], [1, "#1f4e9c"]],
                        zmin=0, zmax=1, showscale=False, row=1, col=i,
                        hovertemplate=labels["hover"] + "<extra>" + name + "</extra>")
        fig.update_xaxes(title_text=labels["x"], row=1, col=i)
    fig.update_yaxes(autorange="reversed", title_text=labels["y"], row=1, col=1)
    fig.update_layout(title=labels["title"], height=460)
    return fig


def bytes_figure(lengths, series: dict[str, list[int]], labels: dict[str, str], fmt=format) -> go.Figure:
    """KV-cache size against context length, log-log (both axes label decades, written by
    `fmt(value, spec)`, the page language's number writer)."""
    fig = go.Figure()
    mib = {name: [y / 2**20 for y in ys] for name, ys in series.items()}
    for name, ys in mib.items():
        fig.add_scatter(x=list(lengths), y=ys, name=name, mode="lines+markers",
                        hovertemplate=labels["x"] + " = %{x:,}: %{y:,.2f} MiB<extra>" + name + "</extra>")
    fig.update_xaxes(title_text=labels["x"])
    fig.update_yaxes(title_text=labels["y"])
    decade_axis(fig, "x", list(lengths), fmt)
    decade_axis(fig, "y", list(mib.values()), fmt)
    fig.update_layout(title=labels["title"], height=460, legend=LEGEND)
    return fig


def fact_figure(distances, series: dict[str, list[float]], control: float, marks: dict[str, int],
                labels: dict[str, str], fmt=format) -> go.Figure:
    """p(answer) against the fact's distance for each layout, with the window edges marked
    (log p axis: decades written by `fmt(value, spec)`)."""
    fig = go.Figure()
    for name, ys in series.items():
        fig.add_scatter(x=list(distances), y=list(ys), name=name, mode="lines+markers",
                        hovertemplate="d = %{x}: p = %{y:.4f}<extra>" + name + "</extra>")
    log_y_hline(fig, max(control, 1e-9), labels["control"], line_dash="dot", line_color="grey")
    for text, x in marks.items():
        fig.add_vline(x=x, line_dash="dash", line_color="#c44", annotation_text=text, annotation_position="top")
    fig.update_xaxes(title_text=labels["x"])
    fig.update_yaxes(title_text=labels["y"])
    decade_axis(fig, "y", [list(series.values()), max(control, 1e-9)], fmt)
    fig.update_layout(title=labels["title"], height=460, legend=LEGEND)
    return fig
