"""Figures for the padding-mask page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

LEGEND = dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right")
# the heatmap's width where it is narrowest: the page draws it wide (responsive.WIDE_PX = 720 px,
# scrolling sideways on a phone) less the prompt labels at its left; one 11 px character
PLOT_PX, CHAR_PX, CELL_FONT = 620, 6.8, 11


def fit_cell(text: str, columns: int) -> str:
    """`text` cut to what one of `columns` equal cells can show ("capi…"); hover keeps it whole."""
    room = max(1, int(PLOT_PX / columns / CHAR_PX))
    return text if len(text) <= room else (text[:room - 1] + "…" if room > 1 else "…")


def batch_figure(valid: np.ndarray, texts: list[list[str]], positions: np.ndarray, labels: dict[str, str]) -> go.Figure:
    """The padded (B, T) tensor: real tokens vs padding, token text and position on hover."""
    B, T = valid.shape
    fig = go.Figure(go.Heatmap(
        z=valid, x=list(range(T)), y=[f"{labels['prompt']} {b + 1}" for b in range(B)],
        colorscale=[[0, "#e8e8e8"], [1, "#4c78a8"]], zmin=0, zmax=1, showscale=False,
        text=[[fit_cell(s, T) for s in row] for row in texts], texttemplate="%{text}" if T <= 32 else None,
        textfont=dict(size=CELL_FONT), customdata=np.dstack([positions, np.array(texts, dtype=object)]), xgap=1, ygap=2,
        hovertemplate="%{y}, " + labels["col"] + " %{x}: %{customdata[1]}<br>" + labels["pos"]
                      + " %{customdata[0]}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text=labels["x"])
    fig.update_layout(title=labels["title"], height=120 + 45 * B)
    return fig


BAR_LABEL_PX = 11           # the smallest size a bar's label is drawn at (uniformtext)


def times_figure(names: list[str], seconds, fastest, slowest, tokens: list[str], labels: dict[str, str]) -> go.Figure:
    """Measured median time of each way to run the batch (bars), fastest..slowest repeat (error
    bars), with the token rows it processed (`tokens`: already formatted labels, "344 token
    rows"), the count on a line above its words: Plotly shrinks an outside label to its bar's
    width, and on a phone "344 baris token" came out ~7 px; two lines at BAR_LABEL_PX or more."""
    med = np.asarray(seconds) * 1000
    fig = go.Figure(go.Bar(x=names, y=med, text=[s.replace(" ", "<br>", 1) for s in tokens], textposition="outside",
                           cliponaxis=False,
                           error_y=dict(type="data", symmetric=False, array=np.asarray(slowest) * 1000 - med,
                                        arrayminus=med - np.asarray(fastest) * 1000),
                           hovertemplate="%{x}: %{y:,.0f} ms<extra></extra>"))
    fig.update_yaxes(title_text=labels["y"], rangemode="tozero")
    fig.update_layout(title=labels["title"], height=380, uniformtext=dict(minsize=BAR_LABEL_PX, mode="show"))
    return fig
