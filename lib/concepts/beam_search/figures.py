"""Figures for the beam-search page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from lib.concepts.beam_search.beam_search import FINISHED, KEPT, PRUNED, BeamRecord
from lib.concepts.plot_marks import LABEL_STEP_PX, decade_axis, label_rows

COLORS = {KEPT: "#1f77b4", FINISHED: "#2ca02c", "cut": "#ff7f0e", "pruned": "#b0b0b0", "win": "#d62728"}


def winner_path(record: BeamRecord, hyp_index: int) -> set[int]:
    node, path = record.hypotheses[hyp_index].node, set()
    while node >= 0:
        path.add(node)
        node = record.candidates[node].parent
    return path


def _say(text, **fields) -> str:
    """A label filled with `fields`: a callable (the page's t(key, ...)) or a format string."""
    return text(**fields) if callable(text) else text.format(**fields)


PRUNED_ROW = 0.3      # the height of a rank no labelled node uses, in rows of a labelled one


def _labelled_ranks(record: BeamRecord) -> set[int]:
    return {c.rank for c in record.candidates if c.fate != PRUNED}


def rank_rows(record: BeamRecord, K: int) -> list[float]:
    """The y of each rank (0 at the top, going down): a rank where some node carries a token label
    (kept, finished, cut) takes a whole row, a rank only pruned candidates reach PRUNED_ROW of one.
    Issue 33 re-look: 20 equal rows put the 4 beams' labels in the top fifth, crowding each other."""
    labelled, ys, y = _labelled_ranks(record), [], 0.0
    for r in range(K):
        ys.append(y)
        y -= 1.0 if r in labelled or r + 1 in labelled else PRUNED_ROW
    return ys


def _rank_ticks(record: BeamRecord, row_y: list[float]) -> list[int]:
    """The ranks numbered on the axis: every labelled one, then every 5th and the last where a
    whole row is free above them."""
    labelled, shown = _labelled_ranks(record), []
    for r in range(len(row_y)):
        if r in labelled or ((r + 1) % 5 == 0 or r == len(row_y) - 1) and (not shown or row_y[shown[-1]] - row_y[r] >= 0.9):
            shown.append(r)
    return shown


def tree_figure(record: BeamRecord, token_texts: list[str], scores: dict[int, float], winner: int | None,
                stop_step: int, labels: dict[str, str], upto: int | None = None) -> go.Figure:
    """Beam tree: x = generated token number, y = the candidate's rank by Σ log p at its step
    (best on top). Kept beams blue, finished hypotheses green (orange if cut at
    max_new_tokens), pruned grey; the winner's path red. `scores` maps candidate index ->
    normalized score for finished ones (hover). `upto` (0-based step): draw only the steps up to
    it (the step-through); the winner's path is drawn only once the whole search is shown.
    `winner` None: a search still running (`beam_search`'s on_step), drawn in the frame of its
    max_new_tokens steps, no path red yet.
    `labels["hover"]` / `labels["hover_score"]`: a text with {tok} {n} {lp} {cum} {fate} {rank} /
    {score} fields, or a callable taking them as keywords (the page's `t(key, **fields)`, so
    the numbers are written in the page's language)."""
    last = record.n_steps - 1 if upto is None else min(upto, record.n_steps - 1)
    K = max((c.rank for c in record.candidates), default=0) + 1
    row_y = rank_rows(record, K)
    y = np.array([row_y[c.rank] for c in record.candidates])   # root (the prompt) at y = 0
    win = winner_path(record, winner) if winner is not None and last == record.n_steps - 1 else set()
    fig = go.Figure()
    ex, ey, wx, wy = [], [], [], []
    for i, c in enumerate(record.candidates):
        if c.step > last:
            continue
        px, py = (0, 0.0) if c.parent < 0 else (c.step, y[c.parent])
        xs, ys = (wx, wy) if i in win else (ex, ey)
        xs += [px, c.step + 1, None]
        ys += [py, y[i], None]
    fig.add_scatter(x=ex, y=ey, mode="lines", line=dict(color="rgba(150,150,150,0.35)", width=1),
                    hoverinfo="skip", showlegend=False)
    fig.add_scatter(x=wx, y=wy, mode="lines", line=dict(color=COLORS["win"], width=3.5),
                    hoverinfo="skip", name=labels["winner"], showlegend=bool(wx))
    groups = {"pruned": [], KEPT: [], FINISHED: [], "cut": []}
    for i, c in enumerate(record.candidates):
        if c.step > last:
            continue
        key = c.fate if c.fate != FINISHED else (FINISHED if c.ends else "cut")
        groups["pruned" if key == "pruned" else key].append(i)
    style = {"pruned": dict(size=6, symbol="circle", opacity=0.45),
             KEPT: dict(size=10, symbol="circle", opacity=1.0),
             FINISHED: dict(size=14, symbol="star", opacity=1.0),
             "cut": dict(size=11, symbol="square", opacity=1.0)}
    for key, idx in groups.items():
        if not idx:
            continue
        cs = [record.candidates[i] for i in idx]
        hover = []
        for i, c in zip(idx, cs):
            h = _say(labels["hover"], tok=token_texts[i], n=c.step + 1, lp=c.logprob, cum=c.cum_logprob,
                     fate=labels[f"fate_{key}"], rank=c.rank + 1)
            if i in scores:
                h += "<br>" + _say(labels["hover_score"], score=scores[i])
            hover.append(h)
        st = style[key]
        fig.add_scatter(
            x=[c.step + 1 for c in cs], y=[y[i] for i in idx], name=labels[f"fate_{key}"],
            mode="markers" if key == "pruned" else "markers+text",
            text=None if key == "pruned" else [token_texts[i] for i in idx],
            textposition="top center", textfont=dict(size=10, shadow="auto"),   # a halo: the red path passes under
            cliponaxis=False,                                  # the top row's labels run above the plot area
            marker=dict(size=st["size"], symbol=st["symbol"], color=COLORS[key], opacity=st["opacity"],
                        line=dict(width=[2 if i in win else 0 for i in idx], color=COLORS["win"])),
            hovertext=hover, hoverinfo="text")
    fig.add_scatter(x=[0], y=[0], mode="markers+text", text=[labels["prompt"]], textposition="bottom center",
                    marker=dict(size=12, color="black", symbol="diamond"), hoverinfo="skip", showlegend=False)
    if stop_step < last:
        fig.add_vrect(x0=stop_step + 1.5, x1=last + 1.5, fillcolor="grey", opacity=0.12, line_width=0,
                      annotation_text=labels["after_stop"], annotation_position="top left")
    frame = record.n_steps if winner is not None else record.max_new_tokens
    fig.update_xaxes(title_text=labels["x"], dtick=1, range=[-1.2, frame + 0.7])
    ticks = _rank_ticks(record, row_y)
    fig.update_yaxes(title_text=labels["y"], tickvals=[row_y[r] for r in ticks], ticktext=[str(r + 1) for r in ticks],
                     range=[row_y[-1] - 0.6, 0.8])
    fig.update_layout(title=labels["title"], height=max(420, 24 * K + 160), hovermode="closest",
                      legend=dict(orientation="v", y=-0.12, yanchor="top", x=0, xanchor="left"))
    return fig            # the legend a column at the left: on a phone the tree scrolls sideways, the legend is all in view


def score_vs_alpha_figure(alphas, lines: np.ndarray, names: list[str], winners: np.ndarray, show: list[int],
                          alpha_now: float, flips, labels: dict[str, str], fmt=format) -> go.Figure:
    """Each shown hypothesis' score S / L^alpha, drawn as -score on a reversed log axis (higher
    = better): log(-S / L^alpha) = log(-S) - alpha log L is a straight line of slope -log L,
    so lines of different lengths cross once. The winning stretch of each line is thick.
    `fmt(x, spec)` writes numbers in the page's language; labels "flip"/"now" take {a} as text."""
    fig = go.Figure()
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
               "#bcbd22", "#7f7f7f", "#aec7e8", "#ffbb78"]     # beam_rerank.MAX_LINES colours
    for j, h in enumerate(show):
        color = palette[j % len(palette)]
        fig.add_scatter(x=alphas, y=-lines[h], customdata=lines[h], mode="lines", name=names[h],
                        line=dict(color=color, width=1.5), legendgroup=str(h),
                        hovertemplate="α = %{x:.2f}<br>" + labels.get("score", "score") + " = %{customdata:.4f}<extra>"
                        + names[h] + "</extra>")
        wins = np.where(winners == h, -lines[h], np.nan)
        if np.isfinite(wins).any():
            fig.add_scatter(x=alphas, y=wins, mode="lines", line=dict(color=color, width=6), opacity=0.5,
                            legendgroup=str(h), showlegend=False, hoverinfo="skip")
    rows = label_rows([f.alpha for f in flips], float(alphas[-1] - alphas[0]))
    for f, row in zip(flips, rows):          # flips close together: their labels stack, not overlap
        fig.add_vline(x=f.alpha, line_dash="dot", line_color="black")
        fig.add_annotation(x=f.alpha, xref="x", y=0, yref="paper", xanchor="left", yanchor="bottom",
                           yshift=LABEL_STEP_PX * row, showarrow=False, font=dict(size=11),
                           text=labels["flip"].format(a=fmt(f.alpha, ".2f")))
    fig.add_vline(x=alpha_now, line_color=COLORS["win"], line_width=2,
                  annotation_text=labels["now"].format(a=fmt(alpha_now, "g")), annotation_position="top left")
    fig.update_xaxes(title_text=labels["x"])
    fig.update_yaxes(title_text=labels["y"], autorange="reversed")
    decade_axis(fig, "y", [-lines[h] for h in show], fmt)
    fig.update_layout(title=labels["title"], height=520,
                      legend=dict(orientation="h", y=-0.18, yanchor="top", x=0, xanchor="left"))
    return fig


def drawn_lines(fig: go.Figure) -> int:
    """How many hypotheses a score_vs_alpha_figure draws: its traces with a legend entry (the
    thick winning stretches share their line's legend group and have none)."""
    return sum(1 for tr in fig.data if tr.showlegend is not False and tr.name)


def probability_figure(names: list[str], seq_prob, exp_score, labels: dict[str, str], fmt=format) -> go.Figure:
    """Sequence probability e^S next to e^score for each hypothesis (log scale: decades written
    by `fmt(value, spec)`, the page language's number writer)."""
    fig = go.Figure()
    fig.add_bar(x=names, y=seq_prob, name=labels["p"], marker_color="#1f77b4",
                hovertemplate="%{x}<br>%{y:.3e}<extra></extra>")
    fig.add_bar(x=names, y=exp_score, name=labels["q"], marker_color="#ff7f0e",
                hovertemplate="%{x}<br>%{y:.3e}<extra></extra>")
    fig.update_yaxes(title_text=labels["y"])
    decade_axis(fig, "y", [seq_prob, exp_score], fmt)
    fig.update_layout(title=labels["title"], barmode="group", height=460,    # legend at the right: never under
                      legend=dict(orientation="v", y=1, yanchor="top", x=1.02, xanchor="left"))  # the title or the long names
    return fig
