"""Figures for the chunked-prefill page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

DECODE, PREFILL = "#4C78A8", "#E45756"


def costs_figure(costs, labels: dict[str, str]) -> go.Figure:
    """Measured forward times against the number of new tokens in the forward: prefill of n
    prompt tokens (red) and one decode step of a batch of b sequences (blue, b tokens), with
    the straight lines fitted to each (what the simulation uses)."""
    fig = go.Figure()
    xp = list(costs.prefill_tokens)
    fig.add_scatter(x=xp, y=[s * 1000 for s in costs.prefill_s], mode="markers", name=labels["prefill"],
                    marker=dict(color=PREFILL, size=9))
    fig.add_scatter(x=xp, y=[costs.prefill(n) * 1000 for n in xp], mode="lines", name=labels["prefill_fit"],
                    line=dict(color=PREFILL, dash="dot"))
    xd = list(costs.decode_batch)
    fig.add_scatter(x=xd, y=[s * 1000 for s in costs.decode_s], mode="markers", name=labels["decode"],
                    marker=dict(color=DECODE, size=9, symbol="diamond"))
    fig.add_scatter(x=xd, y=[costs.decode(b) * 1000 for b in xd], mode="lines", name=labels["decode_fit"],
                    line=dict(color=DECODE, dash="dot"))
    fig.update_xaxes(type="log", title_text=labels["x"])
    fig.update_layout(title=labels["title"], yaxis_title=labels["y"], height=400,
                      legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"))
    return fig


def timeline_figure(results: dict[str, object], labels: dict[str, str]) -> go.Figure:
    """One panel per policy: each request's tokens as dots on the time axis, and every
    scheduler step as a bar (blue = decode only, red = contains prefill)."""
    names = list(results)
    fig = make_subplots(rows=len(names), cols=1, shared_xaxes=True, subplot_titles=names, vertical_spacing=0.12)
    for i, name in enumerate(names, 1):
        res = results[name]
        rids = list(res.token_times)
        for st in res.steps:
            fig.add_shape(type="rect", x0=st.start_s, x1=st.end_s, y0=-1.2, y1=-0.6, row=i, col=1, line_width=0.3,
                          fillcolor=PREFILL if st.prefill_tokens else DECODE)
        for j, rid in enumerate(rids):
            tt = res.token_times[rid]
            fig.add_scatter(x=tt, y=[j] * len(tt), mode="markers", marker=dict(size=5, color=PREFILL if rid.startswith("new") else DECODE),
                            showlegend=False, name=rid, row=i, col=1,
                            hovertemplate=rid + ": %{x:.3f} s<extra></extra>")
        fig.update_yaxes(tickvals=[-0.9] + list(range(len(rids))), ticktext=[labels["steps"]] + rids, row=i, col=1)
    fig.update_xaxes(title_text=labels["x"], row=len(names), col=1)
    fig.update_layout(title=labels["title"], height=260 * len(names) + 80)
    return fig


def sweep_figure(rows, labels: dict[str, str]) -> go.Figure:
    """TBT p50/p99 and mean TTFT against chunk size (the 'none' point = no chunking)."""
    xs = [labels["none"] if r.chunk is None else str(r.chunk) for r in rows]
    fig = make_subplots(rows=1, cols=2, subplot_titles=[labels["tbt"], labels["ttft"]])
    fig.add_scatter(x=xs, y=[r.tbt_p50_s * 1000 for r in rows], name="TBT p50", mode="lines+markers", row=1, col=1)
    fig.add_scatter(x=xs, y=[r.tbt_p99_s * 1000 for r in rows], name="TBT p99", mode="lines+markers", row=1, col=1)
    fig.add_scatter(x=xs, y=[r.ttft_mean_s * 1000 for r in rows], name=labels["ttft_name"], mode="lines+markers",
                    row=1, col=2)
    fig.update_xaxes(title_text=labels["x"], type="category")
    fig.update_yaxes(title_text="ms")
    fig.update_layout(title=labels["title"], height=380)
    return fig
