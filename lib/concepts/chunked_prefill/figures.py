"""Figures for the chunked-prefill page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.concepts.plot_marks import decade_axis

DECODE, PREFILL = "#4C78A8", "#E45756"


def costs_figure(costs, labels: dict[str, str], fmt=format) -> go.Figure:
    """Measured forward times against the number of new tokens in the forward: prefill of n
    prompt tokens (red) and one decode step of a batch of b sequences (blue, b tokens), with
    what the simulation uses: the straight line fitted to the prefills, the decode medians
    joined point to point. The log x axis labels decades written by `fmt(value, spec)`."""
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
    fig.update_xaxes(title_text=labels["x"])
    decade_axis(fig, "x", [xp, xd], fmt)
    fig.update_yaxes(separatethousands=True)                  # 1,200 ms / 1.200 ms, not 1200
    fig.update_layout(title=labels["title"], yaxis_title=labels["y"], height=420,
                      legend=dict(orientation="h", y=-0.2, yanchor="top", x=0, xanchor="left"))
    return fig


def timeline_figure(results: dict[str, object], labels: dict[str, str], cursor_s: float | None = None) -> go.Figure:
    """One panel per policy: each request's tokens as dots on the time axis, and every
    scheduler step as a bar segment (blue = decode only, red = contains prefill); `cursor_s`
    draws a vertical line at that time (the step being inspected)."""
    names = list(results)
    fig = make_subplots(rows=len(names), cols=1, shared_xaxes=True, subplot_titles=names, vertical_spacing=0.12)
    for i, name in enumerate(names, 1):
        res = results[name]
        rids = list(res.token_times)
        fig.add_bar(x=[(st.end_s - st.start_s) for st in res.steps], base=[st.start_s for st in res.steps],
                    y=[labels["steps"]] * len(res.steps), orientation="h", showlegend=False,
                    marker=dict(color=[PREFILL if st.prefill_tokens else DECODE for st in res.steps],
                                line=dict(color="white", width=0.5)),
                    hovertemplate="%{base:.3f} s + %{x:.3f} s<extra></extra>", row=i, col=1)
        for rid in rids:
            tt = res.token_times[rid]
            fig.add_scatter(x=tt, y=[rid] * len(tt), mode="markers", showlegend=False, name=rid, row=i, col=1,
                            marker=dict(size=6, color=PREFILL if rid.startswith("new") else DECODE),
                            hovertemplate=rid + ": %{x:.3f} s<extra></extra>")
        fig.update_yaxes(type="category", categoryorder="array", categoryarray=[labels["steps"]] + rids,
                         autorange="reversed", row=i, col=1)
        if cursor_s is not None:
            fig.add_vline(x=cursor_s, line_color="black", line_width=2, row=i, col=1)
    fig.update_xaxes(title_text=labels["x"], row=len(names), col=1)
    fig.update_layout(title=labels["title"], height=260 * len(names) + 80, bargap=0.3)
    return fig


def real_steps_figure(runs: dict[str, object], preds: dict[str, list[float]], labels: dict[str, str]) -> go.Figure:
    """Measured seconds of every step of the real runs (bars; red = contains prefill) with the
    simulation's prediction of the same steps (black markers). One panel per run, stacked (one
    column: side by side, two panels' titles and axes collided on a phone), same y scale."""
    names = list(runs)
    fig = make_subplots(rows=len(names), cols=1, subplot_titles=names, vertical_spacing=0.2)
    for i, name in enumerate(names, 1):
        r = runs[name]
        xs = list(range(len(r.step_s)))
        fig.add_bar(x=xs, y=[s * 1000 for s in r.step_s], name=labels["measured"], showlegend=i == 1,
                    marker_color=[PREFILL if n else DECODE for n in r.prefill_tokens], row=i, col=1,
                    hovertemplate="%{y:,.0f} ms<extra></extra>")
        p = preds[name]
        fig.add_scatter(x=xs[:len(p)], y=[s * 1000 for s in p], mode="markers", name=labels["predicted"],
                        showlegend=i == 1, marker=dict(color="black", symbol="x", size=10), row=i, col=1)
        fig.update_xaxes(dtick=1 if len(xs) <= 16 else None, row=i, col=1)
        fig.update_yaxes(title_text=labels["y"], matches="y" if i > 1 else None, row=i, col=1)
    fig.update_xaxes(title_text=labels["x"], row=len(names), col=1)
    fig.update_layout(title=labels["title"], height=230 * len(names) + 130,
                      legend=dict(orientation="h", y=-0.12 * 2 / len(names), yanchor="top", x=0, xanchor="left"))
    return fig


def sweep_figure(rows, labels: dict[str, str]) -> go.Figure:
    """TBT p50/p99 and mean TTFT against chunk size (the 'none' point = no chunking): two
    panels stacked (side by side they collided on a phone), sharing the chunk-size axis."""
    xs = [labels["none"] if r.chunk is None else str(r.chunk) for r in rows]
    fig = make_subplots(rows=2, cols=1, subplot_titles=[labels["tbt"], labels["ttft"]], shared_xaxes=True,
                        vertical_spacing=0.14)
    fig.add_scatter(x=xs, y=[r.tbt_p50_s * 1000 for r in rows], name="TBT p50", mode="lines+markers", row=1, col=1)
    fig.add_scatter(x=xs, y=[r.tbt_p99_s * 1000 for r in rows], name="TBT p99", mode="lines+markers", row=1, col=1)
    fig.add_scatter(x=xs, y=[r.ttft_mean_s * 1000 for r in rows], name=labels["ttft_name"], mode="lines+markers",
                    row=2, col=1)
    fig.update_xaxes(type="category")
    fig.update_xaxes(title_text=labels["x"], row=2, col=1)
    fig.update_yaxes(title_text="ms")
    fig.update_layout(title=labels["title"], height=520,
                      legend=dict(orientation="h", y=-0.14, yanchor="top", x=0, xanchor="left"))
    return fig
