"""Figures for the paged-attention page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import plotly.graph_objects as go

PALETTE = ("#4C78A8", "#F58518", "#54A24B", "#B279A2", "#E45756", "#72B7B2", "#EECA3B", "#9D755D")
FREE, SHARED = "#EEEEEE", "#222222"


def owner_colors(seqs: list[str]) -> dict[str, str]:
    return {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(sorted(seqs))}


def pool_map(owners: list[list[str]], ref_counts: list[int], fill: list[int], block_size: int,
             colors: dict[str, str], cols: int, labels: dict[str, str]) -> go.Figure:
    """The physical pool as a grid of blocks: colour = owning sequence (black = shared by
    several), text = owner(s), ref count and slots filled."""
    fig = go.Figure()
    n = len(owners)
    rows = -(-n // cols)
    for b, own in enumerate(owners):
        r, c = b // cols, b % cols
        color = FREE if not own else colors[own[0]] if len(own) == 1 else SHARED
        fig.add_shape(type="rect", x0=c, x1=c + 0.94, y0=-r, y1=-r - 0.9, fillcolor=color,
                      line=dict(color="#888", width=1))
        txt = f"#{b}<br>" + ("—" if not own else "+".join(own) + f"<br>{labels['ref']} {ref_counts[b]} · {fill[b]}/{block_size}")
        fig.add_annotation(x=c + 0.47, y=-r - 0.45, text=txt, showarrow=False,
                           font=dict(size=13, color="white" if own else "#666"))
    for s, col in colors.items():
        fig.add_scatter(x=[None], y=[None], mode="markers", marker=dict(size=12, color=col, symbol="square"), name=s)
    fig.add_scatter(x=[None], y=[None], mode="markers", marker=dict(size=12, color=SHARED, symbol="square"),
                    name=labels["shared"])
    fig.add_scatter(x=[None], y=[None], mode="markers", marker=dict(size=12, color=FREE, symbol="square"),
                    name=labels["free"])
    fig.update_xaxes(visible=False, range=[-0.1, cols])
    fig.update_yaxes(visible=False, range=[-rows - 0.1, 0.1])
    fig.update_layout(title=labels["title"], height=100 * rows + 130, plot_bgcolor="white",
                      legend=dict(orientation="h", y=-0.02, yanchor="top"))
    return fig


def memory_figure(steps, reserved, allocated, stored, labels: dict[str, str]) -> go.Figure:
    """KV memory over the run: contiguous max-length reservation vs paged blocks vs tokens."""
    fig = go.Figure()
    fig.add_scatter(x=steps, y=reserved, name=labels["reserved"], mode="lines", line=dict(dash="dash"))
    fig.add_scatter(x=steps, y=allocated, name=labels["allocated"], mode="lines+markers")
    fig.add_scatter(x=steps, y=stored, name=labels["stored"], mode="lines")
    fig.update_layout(title=labels["title"], xaxis_title=labels["x"], yaxis_title=labels["y"], height=420,
                      legend=dict(orientation="h", y=-0.2, yanchor="top", x=0, xanchor="left"))
    return fig
