"""The model-check page's figures, from data only (no model calls).

`layer_errors(layers, rel, kinds, tol, texts)`: relative error per layer (log y), the
tolerance as a line; `top_logits(labels, engine, ref, texts)`: the two logit series side by side."""
from __future__ import annotations

import plotly.graph_objects as go

from lib.concepts.plot_marks import decade_axis, log_y_hline


def layer_errors(layers, rel, kinds, tol: float, texts: dict, fmt=format) -> go.Figure:
    """The log y axis is labelled by `decade_ticks` (one style: powers of ten, 10⁻⁶, or numbers in
    full, written by `fmt`), not Plotly's SI suffixes beside decimals ("100µ", "1µ", "0,01")."""
    colors = ["#1f77b4" if k == "sliding_attention" else "#d62728" for k in kinds]
    drawn = [max(r, 1e-12) for r in rel]
    fig = go.Figure(go.Bar(x=list(layers), y=drawn, marker_color=colors,
                           hovertemplate="%{x}: %{y:.2e}<extra></extra>"))
    log_y_hline(fig, tol, texts["tol"], line_dash="dash", line_color="black")    # labelled at the line, in log10 units
    fig.update_layout(title=texts["title"], xaxis_title=texts["x"], yaxis_title=texts["y"], yaxis_type="log",
                      height=360, margin=dict(t=60, b=40))
    fig.update_xaxes(tickmode="linear", dtick=1)
    decade_axis(fig, "y", [drawn, tol], fmt)
    return fig


def top_logits(labels, engine, ref, texts: dict) -> go.Figure:
    fig = go.Figure([go.Bar(name=texts["engine"], x=list(labels), y=list(engine)),
                     go.Bar(name=texts["ref"], x=list(labels), y=list(ref))])
    fig.update_layout(title=texts["title"], xaxis_title=texts["x"], yaxis_title=texts["y"], barmode="group",
                      height=360, margin=dict(t=60, b=40))
    return fig
