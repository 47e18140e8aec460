"""Figures for the logit-bias page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

LEGEND = dict(orientation="h", y=-0.18, yanchor="top", x=0, xanchor="left")  # below: titles are long


def change_figure(tokens: list[str], before, after, L: dict[str, str]) -> go.Figure:
    """The top tokens' probability without and with the bias (grouped bars)."""
    fig = go.Figure()
    fig.add_bar(x=tokens, y=before, name=L["before"], marker_color="#9ecae1",
                hovertemplate="%{x}: %{y:.4f}<extra>" + L["before"] + "</extra>")
    fig.add_bar(x=tokens, y=after, name=L["after"], marker_color="#ff7f0e",
                hovertemplate="%{x}: %{y:.4f}<extra>" + L["after"] + "</extra>")
    fig.update_layout(title=L["title"], barmode="group", yaxis_title=L["y"], height=380, legend=LEGEND)
    return fig


def sweep_figure(sweep, temperature: float, current_b: float | None, L: dict[str, str]) -> go.Figure:
    """Measured log odds ratio against b for both orders, with the predictions b/T and b."""
    b = sweep.biases
    fig = go.Figure()
    fig.add_scatter(x=b, y=b / temperature, mode="lines", name=L["pred_bias_first"],
                    line=dict(color="#1f77b4", dash="dot", width=1))
    fig.add_scatter(x=b, y=b, mode="lines", name=L["pred_temp_first"], line=dict(color="#d62728", dash="dot", width=1))
    fig.add_scatter(x=b, y=sweep.bias_first, mode="markers", name=L["bias_first"], marker=dict(color="#1f77b4", size=7))
    fig.add_scatter(x=b, y=sweep.temp_first, mode="markers", name=L["temp_first"],
                    marker=dict(color="#d62728", size=7, symbol="x"))
    if current_b is not None and np.isfinite(current_b):
        fig.add_vline(x=current_b, line_dash="dot", line_color="grey")
    fig.update_xaxes(title_text=L["x"])
    fig.update_yaxes(title_text=L["y"])
    fig.update_layout(title=L["title"], height=400, legend=LEGEND)
    return fig
