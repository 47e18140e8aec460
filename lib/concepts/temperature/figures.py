"""Figures for the temperature page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.concepts.plot_marks import log_x_vline

LEGEND = dict(orientation="h", y=-0.28, yanchor="top", x=0, xanchor="left")  # under the axis title, never under the title


def distributions_figure(tokens: list[str], temps: list[float], probs_by_t, title: str,
                         y_label: str, names: list[str] | None = None) -> go.Figure:
    """Grouped bars: the top tokens' probabilities at each chosen temperature.
    `names`: one legend label per temperature, already written in the page's language."""
    fig = go.Figure()
    names = names or [f"T = {T:g}" for T in temps]
    for name, probs in zip(names, probs_by_t):
        fig.add_bar(x=tokens, y=probs, name=name, hovertemplate="%{x}: %{y:.4f}<extra>" + name + "</extra>")
    fig.update_layout(title=title, barmode="group", yaxis_title=y_label, height=400, legend=LEGEND)
    return fig


def sweep_figure(temps, entropy, top1, chosen: list[float], labels: dict[str, str], fmt=format) -> go.Figure:
    """Entropy (bits) and top-1 probability against T on a log axis. `fmt(x, spec)` writes a
    number in the page's language (tick and line labels)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_scatter(x=temps, y=entropy, name=labels["entropy"], mode="lines", line=dict(color="#1f4e9e", width=3))
    fig.add_scatter(x=temps, y=top1, name=labels["top1"], mode="lines", secondary_y=True,
                    line=dict(color="#e0701b", width=3))
    for T in chosen:
        if T > 0:
            log_x_vline(fig, T, f"T = {fmt(T, 'g')}", line_dash="dot", line_color="grey")
    ticks = [t for t in (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20) if min(temps) <= t <= max(temps)]
    fig.update_xaxes(type="log", title_text=labels["x"], tickvals=ticks, ticktext=[fmt(t, "g") for t in ticks])
    fig.update_yaxes(title_text=labels["entropy"], secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text=labels["top1"], secondary_y=True, range=[0, 1.02], tickformat=".0%",
                     tickvals=[0, 0.25, 0.5, 0.75, 1.0], showgrid=False)
    fig.update_layout(title=labels["title"], height=400, legend=LEGEND)
    return fig


def rank_figure(tokens: list[str], logits_by_t, temp_labels: list[str], labels: dict[str, str]) -> go.Figure:
    """Each top token's scaled logit at every T (one x label per temperature, already written
    in the page's language): lines never cross, so the order is kept."""
    fig = go.Figure()
    for j, tok in enumerate(tokens):
        fig.add_scatter(x=list(temp_labels), y=[row[j] for row in logits_by_t],
                        mode="lines+markers", name=tok)
    fig.update_layout(title=labels["title"], yaxis_title=labels["y"], height=380)
    return fig
