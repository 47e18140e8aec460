"""Figures for the RoPE position-shift page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from lib.concepts.plot_marks import decade_axis, log_y_hline

LEGEND = dict(orientation="h", y=-0.22, yanchor="top", x=0, xanchor="left")  # below: long names
# one colour per way of reusing the moved cache, in every figure and language: the truth blue,
# the correct shortcut green, the wrong one red
VARIANT_COLOURS = {"recompute": "#1f77b4", "rerotated": "#2ca02c", "relabelled": "#d62728"}


def spectrum_figure(wavelengths: np.ndarray, names: list[str], context: int, labels: dict[str, str],
                    fmt=format) -> go.Figure:
    """Tokens per full turn of each channel pair, one line per RoPE base (`names`: its legend
    entry, e.g. "θ = 10,000"; log y, decades written by `fmt(value, spec)`)."""
    fig = go.Figure()
    for name, wl in zip(names, wavelengths):
        fig.add_scatter(x=np.arange(len(wl)), y=wl, name=name, mode="lines",
                        hovertemplate=labels["hover"] + "<extra></extra>")
    log_y_hline(fig, context, labels["context"], at="left",    # wavelengths grow with the pair: at the left
                line_dash="dot", line_color="grey")              # every line is far below a context's length
    fig.update_yaxes(title_text=labels["y"])
    decade_axis(fig, "y", [wavelengths, context], fmt)
    fig.update_xaxes(title_text=labels["x"])
    fig.update_layout(title=labels["title"], height=420, legend=LEGEND)
    return fig


def angles_figure(positions, angles: np.ndarray, pair_names: list[str], labels: dict[str, str]) -> go.Figure:
    """Rotation angle (wrapped to ±π) of a few channel pairs against position."""
    fig = go.Figure()
    for name, row in zip(pair_names, angles):
        fig.add_scatter(x=positions, y=row, name=name, mode="lines")
    fig.update_xaxes(title_text=labels["x"])
    fig.update_yaxes(title_text=labels["y"], range=[-3.3, 3.3])
    fig.update_layout(title=labels["title"], height=420, legend=LEGEND)
    return fig


def shift_scores_figure(deltas, joint, key_only, labels: dict[str, str]) -> go.Figure:
    """One real (query, key) score when both move by Δ vs when only the key moves."""
    fig = go.Figure()
    fig.add_scatter(x=deltas, y=joint, name=labels["joint"], mode="lines", line=dict(width=4))
    fig.add_scatter(x=deltas, y=key_only, name=labels["key_only"], mode="lines")
    fig.update_xaxes(title_text=labels["x"])
    fig.update_yaxes(title_text=labels["y"])
    fig.update_layout(title=labels["title"], height=420, legend=LEGEND)
    return fig


def next_token_figure(tokens: list[str], probs_by_variant: dict[str, list[float]], labels: dict[str, str],
                      names: dict[str, str] | None = None) -> go.Figure:
    """Next-token probabilities of the top tokens under each way of reusing the moved cache.
    `probs_by_variant` is keyed by variant ("recompute", "rerotated", "relabelled": its colour
    in VARIANT_COLOURS); `names` maps a variant to its legend entry (default: the key)."""
    fig = go.Figure()
    for key, row in probs_by_variant.items():
        name = (names or {}).get(key, key)
        fig.add_bar(x=tokens, y=row, name=name, marker_color=VARIANT_COLOURS.get(key),
                    hovertemplate="%{x}: %{y:.4f}<extra>" + name + "</extra>")
    fig.update_layout(title=labels["title"], barmode="group", yaxis_title=labels["y"], height=430, legend=LEGEND)
    return fig


def sweep_figure(deltas, diffs: dict[str, np.ndarray], labels: dict[str, str], fmt=format,
                 names: dict[str, str] | None = None) -> go.Figure:
    """max |logits − recomputed logits| against Δ (log-log), per variant (`diffs` keyed by
    variant, coloured as in VARIANT_COLOURS; `names`: legend entries). Both axes label decades,
    written by `fmt(value, spec)`."""
    fig = go.Figure()
    shown = {key: np.maximum(ys, 1e-9) for key, ys in diffs.items()}
    for key, ys in shown.items():
        name = (names or {}).get(key, key)
        fig.add_scatter(x=deltas, y=ys, name=name, mode="lines+markers",
                        line=dict(color=VARIANT_COLOURS.get(key)), marker=dict(color=VARIANT_COLOURS.get(key)))
    fig.update_xaxes(title_text=labels["x"])
    fig.update_yaxes(title_text=labels["y"])
    decade_axis(fig, "x", deltas, fmt)
    decade_axis(fig, "y", list(shown.values()), fmt)
    fig.update_layout(title=labels["title"], height=420, legend=LEGEND)
    return fig
