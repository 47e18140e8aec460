"""Figures for the grouped-query attention page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.concepts.attention_scaling.figures import token_ticks
from lib.concepts.plot_marks import decade_axis

# Room past the first and last context (decades of the log axis): a phone turns the x labels 30°,
# and Plotly hides a label that runs past the chart's right edge (ticklabeloverflow "hide past
# div"): "32.768", the context the caption quotes, was missing at 390 px.
EDGE_DECADES = (0.12, 0.4)
LEGEND = dict(orientation="h", y=-0.22, yanchor="top", x=0, xanchor="left")  # below the axis title


NARROW_MAPS = 3             # maps in a row from which each is too narrow for a token under every key
KEY_TICKS = 5               # position ticks under such a map, at most (about)
NICE_STEPS = (1, 2, 5, 10, 20, 50)


def position_ticks(n: int) -> dict:
    """Key positions under a narrow map: every `step`-th position (0, 5, 10, 15 of 17), upright,
    11 px; the first map's rows name the token at each position ("5: ␣Bob")."""
    step = next((s for s in NICE_STEPS if n <= s * KEY_TICKS), NICE_STEPS[-1])
    return dict(tickmode="linear", tick0=0, dtick=step, tickangle=0, tickfont=dict(size=11))


def head_maps_figure(probs: np.ndarray, tokens: list[str], head_titles: list[str],
                     labels: dict[str, str]) -> go.Figure:
    """One attention map (T, S) per query head, in a row: same keys, different weights. With
    NARROW_MAPS maps or more, a map is a fifth of a phone's scrolled width or a projector's, too
    narrow for a turned token label under each of its keys (17 of them at 9 px on the default
    prompt): the keys are numbered every few positions and the first map's rows say which
    token each position holds."""
    H = probs.shape[0]
    fig = make_subplots(rows=1, cols=H, subplot_titles=head_titles, horizontal_spacing=0.04)
    cd = np.array(tokens)[None].repeat(len(tokens), 0)
    narrow = H >= NARROW_MAPS and token_ticks(tokens)
    rows = [f"{i}: {tok}" for i, tok in enumerate(tokens)] if narrow else tokens
    for h in range(H):
        fig.add_heatmap(z=probs[h], zmin=0, zmax=1, colorscale="Viridis", showscale=h == H - 1,
                        customdata=cd, hovertemplate=labels["hover"] + "<extra></extra>", row=1, col=h + 1)
        fig.update_yaxes(autorange="reversed", row=1, col=h + 1, title_text=labels["y"] if h == 0 else None,
                         **(token_ticks(rows) if h == 0 else dict(showticklabels=False)))   # not on the map at its left
        fig.update_xaxes(title_text=labels["x"], row=1, col=h + 1,
                         **(position_ticks(len(tokens)) if narrow else token_ticks(tokens)))
    fig.update_layout(title=labels["title"], height=380)
    return fig


def distance_figure(dist: np.ndarray, labels: dict[str, str], fmt=format) -> go.Figure:
    """Mean total-variation distance between the heads' attention rows (cell text >= 12 px,
    numbers written by `fmt(value, spec)`, the page language's formatter)."""
    names = [f"{labels['head']} {h}" for h in range(dist.shape[0])]
    text = [[fmt(float(v), ".3f") for v in row] for row in dist]
    fig = go.Figure(go.Heatmap(z=dist, x=names, y=names, colorscale="Blues", zmin=0,
                               text=text, texttemplate="%{text}", textfont=dict(size=16),
                               hovertemplate="%{y} · %{x}: %{z:.3f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(title=labels["title"], height=330)
    return fig


def cache_bytes_figure(contexts, series: dict[str, list[float]], own: str, labels: dict[str, str],
                       fmt=format) -> go.Figure:
    """KV-cache size (MiB) against context length for each layout (log-log; the y axis labels
    decades only, the x axis the measured context lengths written by `fmt`)."""
    fig = go.Figure()
    for name, ys in series.items():
        fig.add_scatter(x=contexts, y=ys, name=name + (labels["own"] if name == own else ""),
                        mode="lines+markers", line=dict(width=4 if name == own else 2),
                        customdata=[fmt(c, ",") for c in contexts],
                        text=[fmt(y, ",.1f") for y in ys],
                        hovertemplate=labels["hover"] + "<extra>" + name + "</extra>")
    lo, hi = np.log10(min(contexts)), np.log10(max(contexts))
    fig.update_xaxes(type="log", title_text=labels["x"], tickvals=list(contexts), ticktext=[fmt(c, ",") for c in contexts],
                     range=[lo - EDGE_DECADES[0], hi + EDGE_DECADES[1]])    # the last label is not hidden at the div's edge

    fig.update_yaxes(title_text=labels["y"])
    decade_axis(fig, "y", list(series.values()), fmt)
    fig.update_layout(title=labels["title"], height=420, legend=LEGEND)
    return fig
