"""Figures for the activation-outliers page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from lib.concepts.plot_marks import decade_axis

LEGEND = dict(orientation="h", y=-0.22, yanchor="top", x=0, xanchor="left")   # under the plot, never under the title


def channel_max_figure(cmax: np.ndarray, outliers: np.ndarray, labels: dict, fmt=format) -> go.Figure:
    """One bar per channel: max |x| over the tokens; outlier channels in red (log y, decades
    written by `fmt(value, spec)`, the page language's number writer)."""
    colors = np.where(np.isin(np.arange(len(cmax)), outliers), "#d62728", "#1f77b4")
    fig = go.Figure(go.Bar(x=np.arange(len(cmax)), y=cmax, marker_color=colors, marker_line_width=0,
                           hovertemplate=labels["hover"] + "<extra></extra>"))
    fig.add_hline(y=labels["threshold"], line_dash="dot", line_color="grey",
                  annotation_text=labels["threshold_text"], annotation_position="top left")
    fig.update_layout(title=labels["title"], xaxis_title=labels["x"], yaxis_title=labels["y"], height=360, bargap=0)
    decade_axis(fig, "y", [cmax, labels["threshold"]], fmt)
    return fig


def histogram_figure(values: np.ndarray, steps: dict[str, float], labels: dict, fmt=format) -> go.Figure:
    """Histogram of the activation values (log count: decades from 1 to the number of values,
    written by `fmt(value, spec)`) with each scale choice's step marked."""
    fig = go.Figure(go.Histogram(x=values, nbinsx=200, marker_color="#1f77b4", name=labels["values"]))
    colors = ["#d62728", "#ff7f0e", "#2ca02c", "#9467bd"]
    for (name, step), c in zip(steps.items(), colors):
        for sgn in (-1, 1):
            fig.add_vline(x=sgn * step, line_dash="dash", line_color=c)
        fig.add_scatter(x=[None], y=[None], mode="lines", line=dict(color=c, dash="dash"), name=name)
    fig.update_layout(title=labels["title"], xaxis_title=labels["x"], yaxis_title=labels["y"], height=420, legend=LEGEND)
    fig.update_xaxes(exponentformat="none", separatethousands=True)     # 2,000 / 2.000, not SI "2k"
    decade_axis(fig, "y", [1, len(values)], fmt)
    return fig


def layer_heatmap(cmax: np.ndarray, labels: dict) -> go.Figure:
    """log10 max |x| per (layer, channel): outlier channels are bright vertical lines."""
    fig = go.Figure(go.Heatmap(z=np.log10(np.maximum(cmax, 1e-6)), colorscale="Viridis",
                               colorbar=dict(title="log₁₀ max|x|"),
                               hovertemplate=labels["hover"] + "<extra></extra>"))
    fig.update_layout(title=labels["title"], xaxis_title=labels["x"], yaxis_title=labels["y"], height=360)
    return fig


def sqnr_figure(bits: list[int], grans: list[str], sqnr: np.ndarray, labels: dict) -> go.Figure:
    """Grouped bars: SQNR (dB) per bits (groups) and scale choice (bars). sqnr: (len(bits), len(grans))."""
    fig = go.Figure()
    for j, g in enumerate(grans):
        fig.add_bar(x=[f"int{b}" for b in bits], y=sqnr[:, j], name=g,
                    hovertemplate="%{x} " + g + ": %{y:.1f} dB<extra></extra>")
    fig.update_layout(title=labels["title"], yaxis_title=labels["y"], barmode="group", height=420, legend=LEGEND)
    return fig


def effect_figure(names: list[str], kl: list[float], ppl: list[float], ppl_ref: float, labels: dict) -> go.Figure:
    """Bars: mean next-token KL per experiment; markers: perplexity (right axis), dotted: original."""
    from plotly.subplots import make_subplots

    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_bar(x=names, y=kl, name=labels["kl"], marker_color="#1f77b4")
    fig.add_scatter(x=names, y=ppl, name=labels["ppl"], mode="markers", marker=dict(size=12, color="#d62728"),
                    secondary_y=True)
    fig.add_scatter(x=names, y=[ppl_ref] * len(names), name=labels["ppl_ref"], mode="lines",
                    line=dict(color="#d62728", dash="dot"), secondary_y=True)
    fig.update_yaxes(title_text=labels["kl"], rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text=labels["ppl"], secondary_y=True, tickmode="auto", showgrid=False)   # round ticks of its own
    fig.update_layout(title=labels["title"], height=420, legend=LEGEND)
    return fig
