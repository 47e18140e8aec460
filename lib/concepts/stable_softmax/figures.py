"""Figures for the stable-softmax page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from lib.concepts.plot_marks import decade_axis, x_vline

STATUS_COLOUR = {"ok": "#2ca02c", "overflow": "#d62728", "underflow": "#7f7f7f"}
LEGEND = dict(orientation="h", y=-0.18, yanchor="top", x=0, xanchor="left")  # below: titles are long


def histogram_figure(edges, counts, overflow_at: float, underflow_at: float, z_max: float,
                     L: dict[str, str], fmt=format) -> go.Figure:
    """Histogram of the transformed logits with the dtype's overflow / underflow thresholds
    (log count axis: decades written by `fmt(value, spec)`, the page language's writer)."""
    centres = (edges[:-1] + edges[1:]) / 2
    fig = go.Figure()
    fig.add_bar(x=centres, y=counts, width=np.diff(edges), name=L["count"], marker_color="#9ecae1",
                hovertemplate="z ≈ %{x:.2f}: %{y} " + L["tokens"] + "<extra></extra>")
    lo, hi = float(edges[0]), float(edges[-1])
    if overflow_at < hi:
        fig.add_vrect(x0=max(overflow_at, lo), x1=hi, fillcolor="#d62728", opacity=0.12, line_width=0)
    if underflow_at > lo:
        fig.add_vrect(x0=lo, x1=min(underflow_at, hi), fillcolor="#7f7f7f", opacity=0.15, line_width=0)
    for x, text, colour, bottom in ((underflow_at, L["underflow"], "#555", False),
                                    (overflow_at, L["overflow"], "#d62728", False),
                                    (z_max, L["max"], "#1f77b4", True)):
        if lo - 0.05 * (hi - lo) <= x <= hi + 0.05 * (hi - lo):    # label on the side with room (a phone's
            anchor = "left" if x < (lo + hi) / 2 else "right"        # narrow chart cuts one that runs off);
            x_vline(fig, x, text, bottom=bottom, xanchor=anchor,      # the two above the plot on rows of their own
                    line_color=colour, line_dash="dash")
    fig.update_yaxes(title_text=L["y"])
    decade_axis(fig, "y", counts, fmt)
    fig.update_xaxes(title_text=L["x"])
    fig.update_layout(title=L["title"], height=380, showlegend=False, bargap=0)
    return fig


def probs_figure(tokens: list[str], naive, stable, reference, L: dict[str, str]) -> go.Figure:
    """Top tokens: naive, stable and torch.softmax probabilities side by side (NaN labelled)."""
    fig = go.Figure()
    for name, vals, colour in ((L["naive"], naive, "#d62728"), (L["stable"], stable, "#2ca02c"),
                               (L["torch"], reference, "#1f77b4")):
        vals = [float(v) for v in vals]
        shown = [0.0 if math.isnan(v) else v for v in vals]
        text = ["NaN" if math.isnan(v) else "" for v in vals]
        fig.add_bar(x=tokens, y=shown, name=name, marker_color=colour, text=text, textposition="outside",
                    hovertemplate="%{x}: %{y:.5f}<extra>" + name + "</extra>")
    fig.update_layout(title=L["title"], barmode="group", yaxis_title=L["y"], height=380, legend=LEGEND)
    return fig


def sweep_figure(sweep, windows: dict[str, tuple[float, float]], offset: float, L: dict[str, str]) -> go.Figure:
    """One row per dtype: measured status of the naive softmax at each offset (markers) and
    the predicted safe window (thick bar)."""
    fig = go.Figure()
    names = list(sweep.measured)
    lo_x, hi_x = float(sweep.offsets.min()), float(sweep.offsets.max())
    for row, name in enumerate(names):
        a, b = windows[name]
        a, b = max(a, lo_x), min(b, hi_x)
        if a < b:
            fig.add_scatter(x=[a, b], y=[name, name], mode="lines", line=dict(color="#2ca02c", width=18),
                            opacity=0.25, name=L["window"], showlegend=row == 0, hoverinfo="skip")
    for status in ("ok", "overflow", "underflow"):
        xs, ys = [], []
        for name in names:
            for c, s in zip(sweep.offsets, sweep.measured[name]):
                if s == status:
                    xs.append(float(c))
                    ys.append(name)
        fig.add_scatter(x=xs, y=ys, mode="markers", name=L[status],
                        marker=dict(color=STATUS_COLOUR[status], size=9, symbol="square"),
                        hovertemplate="c = %{x:.2f}, %{y}: " + L[status] + "<extra></extra>")
    row = L["stable_row"]                     # one more row: the stable form, in every dtype at once
    ok = [all(sweep.stable_ok[n][i] for n in names) for i in range(len(sweep.offsets))]
    for good, colour, label in ((True, STATUS_COLOUR["ok"], L["stable_ok"]), (False, STATUS_COLOUR["overflow"], L["stable_bad"])):
        xs = [float(c) for c, o in zip(sweep.offsets, ok) if o == good]
        if xs:
            fig.add_scatter(x=xs, y=[row] * len(xs), mode="markers", name=label,
                            marker=dict(color=colour, size=9, symbol="diamond"),
                            hovertemplate="c = %{x:.2f}: " + label + "<extra></extra>")
    x_vline(fig, offset, L["yours"], xanchor="left" if offset <= (lo_x + hi_x) / 2 else "right",
            line_dash="dot", line_color="black")          # above the plot: not on the stable row's markers
    fig.update_xaxes(title_text=L["x"])
    fig.update_yaxes(categoryorder="array", categoryarray=[row] + names[::-1], title_text=L["y"])
    fig.update_layout(title=L["title"], height=380, legend={**LEGEND, "y": -0.3}, margin=dict(t=60))   # under the axis title
    return fig
