"""Figures for the top-k / top-p page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.concepts.plot_marks import decade_axis

P_COLOUR, K_COLOUR, BOTH_COLOUR, NONE_COLOUR = "#1f77b4", "#ff7f0e", "#2ca02c", "#c7c7c7"
LEGEND = dict(orientation="h", y=-0.18, yanchor="top", x=0, xanchor="left")  # below: titles are long


def cut_curve_figure(curve, tokens: list[str], p: float, k: int, L: dict[str, str], fmt=format) -> go.Figure:
    """Probability per rank (bars) and cumulative probability (line) on a log rank axis,
    with the p level, the top-p cut and the top-k cut (numbers in legends and ticks written by
    `fmt(value, spec)`, the page language's number writer)."""
    ranks = np.arange(1, len(curve.probs) + 1)
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_bar(x=ranks, y=curve.probs, name=L["prob"], marker_color="#9ecae1", customdata=tokens,
                hovertemplate="#%{x} %{customdata}: p = %{y:.4f}<extra></extra>")
    fig.add_scatter(x=ranks, y=curve.cumulative, name=L["cum"], mode="lines", line_color=P_COLOUR,
                    customdata=tokens, secondary_y=True,
                    hovertemplate="#%{x} %{customdata}: Σp = %{y:.4f}<extra></extra>")
    # the cuts as plain traces (shapes on a log axis with a secondary y misplace their labels)
    n = len(ranks)
    fig.add_scatter(x=[1, n], y=[p, p], mode="lines", name=f"p = {fmt(p, 'g')}", secondary_y=True,
                    line=dict(color=P_COLOUR, dash="dot", width=1), hoverinfo="skip")
    fig.add_scatter(x=[curve.nucleus + 0.5] * 2, y=[0, 1], mode="lines", secondary_y=True,
                    name=f"{L['p_cut']} ({curve.nucleus})", line=dict(color=P_COLOUR, width=2), hoverinfo="skip")
    fig.add_scatter(x=[k + 0.5] * 2, y=[0, 1], mode="lines", secondary_y=True,
                    name=f"{L['k_cut']} ({k})", line=dict(color=K_COLOUR, width=2, dash="dash"), hoverinfo="skip")
    fig.update_xaxes(title_text=L["x"], range=[-0.05, np.log10(n) + 0.05])
    decade_axis(fig, "x", [1, n], fmt)
    fig.update_yaxes(title_text=L["prob"], secondary_y=False)
    fig.update_yaxes(title_text=L["cum"], secondary_y=True, range=[0, 1.02], tickmode="linear", tick0=0, dtick=0.2,
                     showgrid=False)
    fig.update_layout(title=L["title"], height=420, legend=LEGEND, bargap=0.05)
    return fig


def nucleus_steps_figure(labels: list[str], nucleus, p_mass, k_mass, p: float, k: int,
                         L: dict[str, str], fmt=format) -> go.Figure:
    """Top: tokens top-p kept at each generated step (bars, log) against the fixed k.
    Bottom: the mass each filter kept at that step — top-p's stays at p, top-k's moves.
    Numbers on ticks and bars written by `fmt(value, spec)`."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.6, 0.4])
    x = list(range(len(labels)))
    fig.add_bar(x=x, y=nucleus, name=L["nucleus"], marker_color=P_COLOUR, customdata=labels,
                text=[fmt(n, ",") for n in nucleus], textposition="outside", cliponaxis=False,
                hovertemplate="%{customdata}: %{y} " + L["tokens"] + "<extra></extra>", row=1, col=1)
    fig.add_scatter(x=x, y=[k] * len(x), mode="lines", name=L["k_line"], line=dict(color=K_COLOUR, dash="dash"),
                    row=1, col=1)
    fig.add_scatter(x=x, y=p_mass, mode="lines+markers", name=L["p_mass"], line_color=P_COLOUR, row=2, col=1)
    fig.add_scatter(x=x, y=k_mass, mode="lines+markers", name=L["k_mass"], line=dict(color=K_COLOUR, dash="dash"),
                    row=2, col=1)
    fig.update_yaxes(title_text=L["y_count"], row=1, col=1)
    decade_axis(fig, "y", [nucleus, k], fmt, row=1, col=1)
    fig.update_yaxes(title_text=L["y_mass"], range=[0, 1.05], row=2, col=1)
    fig.update_xaxes(tickmode="array", tickvals=x, ticktext=labels, tickangle=-60, row=2, col=1)
    fig.update_xaxes(title_text=L["x"], row=2, col=1)
    fig.update_layout(title=L["title"], height=620)  # legend on the right: tick labels are below
    return fig


def kept_sets_figure(sets, tokens: list[str], L: dict[str, str], fmt=format) -> go.Figure:
    """The most likely tokens, coloured by which filter keeps them (log p axis: decades written
    by `fmt(value, spec)`)."""
    cats = [(True, True, L["both"], BOTH_COLOUR), (True, False, L["only_k"], K_COLOUR),
            (False, True, L["only_p"], P_COLOUR), (False, False, L["neither"], NONE_COLOUR)]
    fig = go.Figure()
    ranks = np.arange(1, len(sets.probs) + 1)
    for ink, inp, name, colour in cats:
        sel = (sets.in_k == ink) & (sets.in_p == inp)
        if sel.any():
            fig.add_bar(x=ranks[sel], y=sets.probs[sel], name=name, marker_color=colour,
                        customdata=np.array(tokens, dtype=object)[sel],
                        hovertemplate="#%{x} %{customdata}: p = %{y:.4f}<extra>" + name + "</extra>")
    fig.update_yaxes(title_text=L["y"])
    decade_axis(fig, "y", sets.probs, fmt)
    fig.update_xaxes(title_text=L["x"])
    fig.update_layout(title=L["title"], height=380, legend=LEGEND, bargap=0.1, barmode="overlay")
    return fig


def order_figure(effect, current_T: float, L: dict[str, str], fmt=format) -> go.Figure:
    """Kept-set size against T: temperature before top-p (it changes the set) vs after (it
    cannot). Log-log; ticks written by `fmt(value, spec)`."""
    fig = go.Figure()
    fig.add_scatter(x=effect.temperatures, y=effect.t_first, mode="lines+markers", name=L["t_first"],
                    line_color=P_COLOUR)
    fig.add_scatter(x=effect.temperatures, y=effect.t_after, mode="lines+markers", name=L["t_after"],
                    line=dict(color="#d62728", dash="dash"))
    fig.add_vline(x=np.log10(current_T), line_dash="dot", line_color="grey")   # log axis: log10(x)
    fig.update_xaxes(title_text=L["x"])
    fig.update_yaxes(title_text=L["y"])
    decade_axis(fig, "x", effect.temperatures, fmt)
    decade_axis(fig, "y", [effect.t_first, effect.t_after], fmt)
    fig.update_layout(title=L["title"], height=380, legend=LEGEND)
    return fig
