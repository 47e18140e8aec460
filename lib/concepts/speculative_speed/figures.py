"""The speculative-speed page's figures (its bar chart is the acceptance page's)."""
from __future__ import annotations

import plotly.graph_objects as go

from lib.concepts.speculative_acceptance.figures import LEGEND, bars_figure  # noqa: F401 (used by the page)


def speed_figure(curve_x: list[int], curves: dict[str, list[float]], point_x: list[int],
                 points: dict[str, list[float]], labels: dict[str, str], y_ref: float | None = 1.0,
                 errors: dict[str, list[tuple[float, float]]] | None = None, fmt=format) -> go.Figure:
    """Formula curves evaluated at every (integer) gamma in `curve_x`: small markers joined by a
    thin dotted line, so they read as computed points, not as a measured curve; and measured
    values at the gammas really run (`point_x`): large markers only, never joined, with (low,
    high) error bars where `errors` gives them. Hover numbers written by `fmt(value, spec)`."""
    fig = go.Figure()
    palette = ["#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363", "#fd8d3c"]
    for i, (name, ys) in enumerate(curves.items()):
        fig.add_scatter(x=curve_x, y=ys, mode="lines+markers", name=name, marker=dict(size=6),
                        line=dict(color=palette[i % len(palette)], dash="dot", width=1.5, shape="linear"),
                        text=[fmt(y, ".2f") for y in ys], hovertemplate="γ = %{x}: %{text}<extra>" + name + "</extra>")
    symbols = ["circle", "diamond", "square", "triangle-up"]
    for i, (name, ys) in enumerate(points.items()):
        err = (errors or {}).get(name)
        error_y = None
        if err:
            error_y = dict(type="data", symmetric=False, array=[hi - y for y, (_, hi) in zip(ys, err)],
                           arrayminus=[y - lo for y, (lo, _) in zip(ys, err)], thickness=2)
        fig.add_scatter(x=point_x, y=ys, mode="markers", name=name, error_y=error_y,
                        marker=dict(size=13, color=palette[i % max(len(curves), 1) % len(palette)],
                                    symbol=symbols[(i // max(len(curves), 1)) % len(symbols)],
                                    line=dict(width=1, color="#000000")),
                        text=[fmt(y, ".2f") for y in ys], hovertemplate="γ = %{x}: %{text}<extra>" + name + "</extra>")
    if y_ref is not None:
        fig.add_hline(y=y_ref, line_dash="dash", line_color="grey")
    fig.update_xaxes(title_text=labels["x"], dtick=1)
    fig.update_yaxes(title_text=labels["y"], rangemode="tozero")
    fig.update_layout(title=labels["title"], height=480, legend=LEGEND)
    return fig
