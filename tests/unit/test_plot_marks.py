"""Labels of reference lines on log axes sit at the line, not at 10^value."""
import math

import plotly.graph_objects as go

from lib.concepts.plot_marks import log_x_vline, log_y_hline


def test_labels_are_placed_in_log10_units():
    fig = go.Figure(go.Scatter(x=[0.1, 10], y=[1, 1000]))
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    log_x_vline(fig, 2.0, "T = 2", line_dash="dot")
    log_y_hline(fig, 4096, "context", line_dash="dot")
    vx, hy = fig.layout.annotations
    assert fig.layout.shapes[0].x0 == 2.0 and math.isclose(vx.x, math.log10(2.0))
    assert fig.layout.shapes[1].y0 == 4096 and math.isclose(hy.y, math.log10(4096))
