"""Figures for the attention-scaling page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.concepts.plot_marks import LABEL_BG, decade_axis, log_x_vline

LEGEND = dict(orientation="h", y=-0.22, yanchor="top", x=0, xanchor="left")  # under the plot, never under the title
MAX_TICK_TOKENS = 24


def token_ticks(tokens: list[str]) -> dict:
    """Axis ticks labelled with the tokens themselves when there are few enough to read."""
    if len(tokens) > MAX_TICK_TOKENS:
        return {}
    return dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=tokens, tickfont=dict(size=9))


def heatmaps(probs_a: np.ndarray, probs_b: np.ndarray, tokens: list[str], titles: tuple[str, str],
             labels: dict[str, str]) -> go.Figure:
    """Two attention maps (T, S) side by side: the model's scale and the chosen scale."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.12)
    for col, p in ((1, probs_a), (2, probs_b)):
        fig.add_heatmap(z=p, x=list(range(len(tokens))), y=list(range(len(tokens))), zmin=0, zmax=1,
                        colorscale="Viridis", showscale=col == 2, customdata=np.array(tokens)[None].repeat(len(tokens), 0),
                        hovertemplate=labels["hover"] + "<extra></extra>",
                        row=1, col=col)
        fig.update_xaxes(title_text=labels["x"], row=1, col=col, **token_ticks(tokens))
        fig.update_yaxes(title_text=labels["y"], autorange="reversed", row=1, col=col, **token_ticks(tokens))
    fig.update_layout(title=labels["title"], height=420)
    return fig


def sweep_figure(scales, entropy, max_w, uniform: float, model_scale: float, chosen: float,
                 labels: dict[str, str], fmt=format) -> go.Figure:
    """Mean row entropy (bits) and mean max weight of one head against the scale (log axis,
    decades written by `fmt(value, spec)`, the page language's number writer)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_scatter(x=scales, y=entropy, name=labels["entropy"], mode="lines+markers")
    fig.add_scatter(x=scales, y=max_w, name=labels["max"], mode="lines+markers", secondary_y=True)
    fig.add_hline(y=uniform, line_dash="dot", line_color="grey", annotation_text=labels["uniform"],
                  annotation_position="bottom right",         # under the line: the largest weight nears 1 above it
                  annotation=dict(bgcolor=LABEL_BG, borderpad=1))    # a curve crossing it passes under the text
    log_x_vline(fig, model_scale, labels["model"], line_dash="dash", line_color="green")
    log_x_vline(fig, chosen, labels["chosen"], bottom=True, line_dash="dot", line_color="red")
    fig.update_xaxes(title_text=labels["x"])
    decade_axis(fig, "x", scales, fmt)
    fig.update_yaxes(title_text=labels["entropy"], secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text=labels["max"], secondary_y=True, range=[0, 1.02], tickmode="linear", tick0=0,
                     dtick=0.2, showgrid=False)
    fig.update_layout(title=labels["title"], height=430, legend=LEGEND)
    return fig


def variance_figure(dims, var_raw, var_scaled, labels: dict[str, str], fmt=format) -> go.Figure:
    """Var(q.k) and Var(q.k / sqrt(d)) of random vectors against d (log-log), with y = d
    (decades written by `fmt(value, spec)`)."""
    fig = go.Figure()
    fig.add_scatter(x=dims, y=dims, name=labels["ideal"], mode="lines", line=dict(dash="dot", color="grey"))
    fig.add_scatter(x=dims, y=var_raw, name=labels["raw"], mode="markers+lines")
    fig.add_scatter(x=dims, y=var_scaled, name=labels["scaled"], mode="markers+lines")
    fig.update_xaxes(title_text=labels["x"])
    fig.update_yaxes(title_text=labels["y"])
    decade_axis(fig, "x", dims, fmt)
    decade_axis(fig, "y", [dims, var_raw, var_scaled], fmt)
    fig.update_layout(title=labels["title"], height=420, legend=LEGEND)
    return fig


def next_token_figure(tokens: list[str], names: list[str], top_probs, labels: dict[str, str]) -> go.Figure:
    """The model's top next tokens: their probability when the model runs at other scales
    (one bar series per scale, named by the caller in the page's language)."""
    fig = go.Figure()
    for name, row in zip(names, top_probs):
        fig.add_bar(x=tokens, y=row, name=name,
                    hovertemplate="%{x}: %{y:.4f}<extra></extra>")
    fig.update_layout(title=labels["title"], barmode="group", yaxis_title=labels["y"], height=430, legend=LEGEND)
    return fig


def model_sweep_figure(factors, entropy, kl, labels: dict[str, str], fmt=format) -> go.Figure:
    """Next-token entropy and KL from the real model against the attention scale (log x axis,
    decades or round values written by `fmt(value, spec)`)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_scatter(x=factors, y=entropy, name=labels["entropy"], mode="lines+markers")
    fig.add_scatter(x=factors, y=kl, name=labels["kl"], mode="lines+markers", secondary_y=True)
    fig.update_xaxes(title_text=labels["x"])
    decade_axis(fig, "x", factors, fmt)
    fig.update_yaxes(title_text=labels["entropy"], secondary_y=False)
    fig.update_yaxes(title_text=labels["kl"], secondary_y=True, rangemode="tozero", tickmode="auto", showgrid=False)
    fig.update_layout(title=labels["title"], height=420, legend=LEGEND)
    return fig
