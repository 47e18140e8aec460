"""Figures for the life of a token (data in, Plotly figure out; no model calls).
Every label arrives already written in the page's language (`labels` dicts, `fmt`)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.concepts.plot_marks import decade_axis

LEGEND = dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right")


def embedding_figure(embed: np.ndarray, tokens: list[str], labels: dict) -> go.Figure:
    """Heatmap of the (T, D) embeddings entering layer 0: one row per token."""
    lim = float(np.abs(embed).max())
    fig = go.Figure(go.Heatmap(z=embed, y=[f"{i}: {t}" for i, t in enumerate(tokens)], colorscale="RdBu",
                               zmin=-lim, zmax=lim, colorbar=dict(title=labels["value"]),
                               hovertemplate="%{y} · dim %{x}: %{z:.3f}<extra></extra>"))
    fig.update_layout(title=labels["title"], height=120 + 28 * len(tokens), xaxis_title=labels["x"])
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


def attention_stack_figure(rows: np.ndarray, layer_names: list[str], tokens: list[str], labels: dict) -> go.Figure:
    """(L, T) heatmap: how much the LAST token attends to each prompt token, in every layer
    (mean over heads). Rows are layers, top = first layer."""
    fig = go.Figure(go.Heatmap(z=rows, x=[f"{i}: {t}" for i, t in enumerate(tokens)], y=layer_names,
                               colorscale="Viridis", zmin=0, zmax=1, colorbar=dict(title=labels["value"]),
                               hovertemplate="%{y} → %{x}: %{z:.3f}<extra></extra>"))
    fig.update_layout(title=labels["title"], height=560, xaxis_title=labels["x"], yaxis_title=labels["y"])
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category")
    return fig


def cache_growth_figure(layer_names: list[str], cumulative_kib: list[float], decode_kib: float,
                        labels: dict) -> go.Figure:
    """Bars: the whole KV cache's size (KiB) right after each layer appended the prompt's
    entries; a dashed line at its size after one more decode step."""
    fig = go.Figure(go.Bar(x=layer_names, y=cumulative_kib, marker_color="#1f4e9e", name=labels["bars"],
                           hovertemplate="%{x}: %{y:.1f} KiB<extra></extra>"))
    fig.add_hline(y=decode_kib, line_dash="dash", line_color="#e0701b")
    fig.add_annotation(x=1, xref="paper", y=decode_kib, text=labels["decode"], showarrow=False,
                       xanchor="right", yanchor="bottom", font=dict(color="#e0701b"))
    fig.update_layout(title=labels["title"], height=360, yaxis_title=labels["y"], xaxis_title=labels["x"])
    fig.update_xaxes(type="category")
    return fig


def updates_figure(layer_names: list[str], attn: list[float], mlp: list[float], resid: list[float],
                   labels: dict) -> go.Figure:
    """Grouped bars per layer: the size of what attention and the MLP add at the last position,
    and the residual stream's size after the layer (log scale: they span decades)."""
    fig = go.Figure()
    fig.add_bar(x=layer_names, y=attn, name=labels["attn"], marker_color="#1f4e9e")
    fig.add_bar(x=layer_names, y=mlp, name=labels["mlp"], marker_color="#e0701b")
    fig.add_scatter(x=layer_names, y=resid, name=labels["resid"], mode="lines+markers", line=dict(color="#444"))
    fig.update_yaxes(title_text=labels["y"])
    decade_axis(fig, "y", [max(v, 1e-3) for v in attn + mlp + resid], labels["fmt"])
    fig.update_layout(title=labels["title"], barmode="group", height=420,
                      legend=dict(orientation="h", y=-0.18, yanchor="top", x=0, xanchor="left"))
    fig.update_xaxes(type="category")
    return fig


def layer_detail_figure(attn: np.ndarray, tokens: list[str], head_names: list[str], labels: dict) -> go.Figure:
    """One layer's attention weights, one (T, T) heatmap per head (query rows, key columns)."""
    H = attn.shape[0]
    fig = make_subplots(rows=1, cols=H, subplot_titles=head_names, horizontal_spacing=0.03, shared_yaxes=True)
    ticks = [f"{i}: {t}" for i, t in enumerate(tokens)]
    for h in range(H):
        fig.add_trace(go.Heatmap(z=attn[h], x=ticks, y=ticks, colorscale="Viridis", zmin=0, zmax=1,
                                 showscale=h == H - 1, hovertemplate="%{y} → %{x}: %{z:.3f}<extra></extra>"),
                      row=1, col=h + 1)
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", showticklabels=len(tokens) <= 12, tickangle=-60)
    fig.update_layout(title=labels["title"], height=420)
    return fig


def vector_figure(values: np.ndarray, title: str, x_label: str, y_label: str, color: str = "#1f4e9e") -> go.Figure:
    """Bars of one vector (an MLP activation, the final hidden state) by channel index."""
    fig = go.Figure(go.Bar(y=values, marker_color=color, hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
    fig.update_layout(title=title, height=300, xaxis_title=x_label, yaxis_title=y_label, bargap=0)
    return fig


def stages_figure(tokens: list[str], stage_names: list[str], probs: list[np.ndarray], kept: list[int],
                  chosen: int | None, labels: dict) -> go.Figure:
    """Small multiples, one per pipeline stage: the same tokens' probabilities after that stage
    (the subplot title says how many tokens are still allowed). `chosen`: the sampled token's
    index in `tokens`, outlined in every panel."""
    n = len(stage_names)
    titles = [f"{s}<br><sup>{labels['kept'](k)}</sup>" for s, k in zip(stage_names, kept)]
    fig = make_subplots(rows=1, cols=n, subplot_titles=titles, shared_yaxes=True, horizontal_spacing=0.05)  # "1.0" and "0.0" apart
    for j, p in enumerate(probs):
        colors = ["#e0701b" if i == chosen else "#1f4e9e" for i in range(len(tokens))]
        fig.add_trace(go.Bar(x=p, y=tokens, orientation="h", marker_color=colors, showlegend=False,
                             hovertemplate="%{y}: %{x:.4f}<extra></extra>"), row=1, col=j + 1)
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(range=[0, 1], tickvals=[0, 0.5, 1], tickformat=".1f")
    fig.update_layout(title=labels["title"], height=150 + 26 * len(tokens), margin=dict(t=110))
    return fig
