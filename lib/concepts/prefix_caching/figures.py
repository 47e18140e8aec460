"""Figures for the prefix-caching page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import plotly.graph_objects as go

HIT, MISS, PARTIAL, CACHED = "#54A24B", "#E45756", "#BBBBBB", "#4C78A8"


CHAIN_PX = 600              # the blocks' width where narrowest: drawn wide (responsive.WIDE_PX = 720) less the row labels
BLOCK_CHAR = 0.62           # a character's width per px of font size
BLOCK_FONT = (7, 10)        # the labels' font size, px: the smallest, the largest
# The presenter view (a 1280x720 projector): the chart is ~1,230 px wide, ~1,050 px of blocks, and
# lib/ui/responsive.py grows every annotation by PRESENT_GROWTH (its PRESENT_SCALE) afterwards.
PRESENT_CHAIN_PX, PRESENT_GROWTH = 1050, 1.3
PRESENT_FONT = (11, 15)     # before that growth: 14-20 px on the screen (7-10 px read as ~9-13 there)


def block_font(n_blocks: int, texts, present: bool = False) -> int:
    """The labels' font size (px) at which the longest line of `texts` fits one block (0.8 of
    its column of CHAIN_PX / n_blocks), between BLOCK_FONT's bounds; `present`: the projector's
    wider blocks and larger bounds, before the presenter view's growth."""
    chars = max((len(line) for t in texts for line in t.split("<br>")), default=1)
    width, (lo, hi) = (PRESENT_CHAIN_PX / PRESENT_GROWTH, PRESENT_FONT) if present else (CHAIN_PX, BLOCK_FONT)
    fits = 0.8 * width / max(n_blocks + 0.1, 1) / (BLOCK_CHAR * chars)
    return int(max(lo, min(hi, fits)))


def short_hash(h: str) -> str:
    """A block's hash as its label shows it: 0x and the first four hex digits ("0x1162"), as wide
    as six digits and never read as a quantity (a hash of digits only would look like 116,249)."""
    return f"0x{h[:4]}"


def hash_chain(rows_cached: list[str], rows: list, labels: dict[str, str], present: bool = False) -> go.Figure:
    """Two rows of blocks: the cached prompt's chained hashes, and the new prompt's blocks
    coloured hit / miss / partial (never cached), each labelled with its hash, in a font that
    fits the block (`block_font`: the words are longer in Indonesian; `present`: a projector's)."""
    fig = go.Figure()
    blocks = [(i, 1, CACHED, f"#{i}<br>{short_hash(h)}") for i, h in enumerate(rows_cached)]
    for r in rows:
        color = HIT if r.hit else PARTIAL if not r.hash_new else MISS
        word = labels["hit"] if r.hit else labels["partial"] if not r.hash_new else labels["miss"]
        blocks.append((r.index, 0, color, f"#{r.index}<br>{short_hash(r.hash_new) if r.hash_new else '—'}<br>{word}"))
    size = block_font(max(len(rows_cached), len(rows), 1), [b[3] for b in blocks], present)
    for x, y, color, text in blocks:
        _block(fig, x, y, color, text, size)
    for r in rows:
        if r.index > 0:
            fig.add_annotation(x=r.index - 0.03, y=0.45, ax=r.index - 0.17, ay=0.45, xref="x", yref="y",
                               axref="x", ayref="y", showarrow=True, arrowhead=2, arrowsize=0.8, text="")
    n = max(len(rows_cached), len(rows), 1)
    fig.update_xaxes(range=[-0.1, n], tickvals=[i + 0.4 for i in range(n)], ticktext=[str(i) for i in range(n)],
                     title_text=labels["x"])
    fig.update_yaxes(range=[-0.1, 2.0], tickvals=[0.45, 1.45], ticktext=[labels["new"], labels["cached"]])
    fig.update_layout(title=labels["title"], height=300, plot_bgcolor="white", showlegend=False)
    return fig


def _block(fig, x, y, color, text, size=BLOCK_FONT[1]):
    fig.add_shape(type="rect", x0=x, x1=x + 0.8, y0=y, y1=y + 0.9, fillcolor=color, line=dict(color="#666"))
    fig.add_annotation(x=x + 0.4, y=y + 0.45, text=text, showarrow=False, font=dict(size=size, color="white"))


def timing_figure(names: list[str], seconds: list[float], labels: dict[str, str]) -> go.Figure:
    """Median prefill seconds of each run (bars, the first on top), labelled in ms by Plotly (so
    the page's separators apply: 1,234 ms / 1.234 ms). Each run's name is written above its
    bar across the chart's width, not as a tick label at its left: a long name there took most
    of a phone's width and squashed the bars."""
    import textwrap

    n = len(names)
    ys = [n - 1 - i for i in range(n)]
    fig = go.Figure(go.Bar(x=seconds, y=ys, orientation="h", width=0.42, customdata=[s * 1000 for s in seconds],
                           texttemplate="%{customdata:,.0f} ms", textposition="auto", hovertext=names,
                           hovertemplate="%{hovertext}: %{customdata:,.0f} ms<extra></extra>",
                           marker_color=["#888888", HIT][:n] + ["#888888"] * max(n - 2, 0)))
    for y, name in zip(ys, names):
        fig.add_annotation(x=0, xref="paper", y=y + 0.23, yref="y", text="<br>".join(textwrap.wrap(name, 44)),
                           showarrow=False, xanchor="left", yanchor="bottom", align="left", font=dict(size=12))
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, range=[-0.45, n - 0.2])
    fig.update_layout(title=labels["title"], xaxis_title=labels["x"], height=150 + 60 * n)
    return fig


def shift_figure(tokens: list[str], p_recompute: list[float], p_reuse: list[float], labels: dict[str, str]) -> go.Figure:
    """The next token's probabilities after a recompute at the request's positions and after
    reusing K/V computed at other positions, side by side for the same tokens (the recompute's
    likeliest first)."""
    fig = go.Figure([go.Bar(x=tokens, y=p_recompute, name=labels["recompute"], marker_color=CACHED),
                     go.Bar(x=tokens, y=p_reuse, name=labels["reuse"], marker_color="#F58518")])
    fig.update_layout(title=labels["title"], barmode="group", yaxis_title=labels["y"], height=360,
                      legend=dict(orientation="h", y=-0.25))
    fig.update_yaxes(rangemode="tozero")
    return fig


def diff_html(tokens: list[str], same: list[bool], block_size: int) -> str:
    """Tokens as chips: green = inside the common token prefix, orange = after it; a thin
    bar marks every block boundary. The div's class `token-view` lets the presenter view
    enlarge the chips (lib/ui/present.py)."""
    import html

    out = []
    for i, (tok, s) in enumerate(zip(tokens, same)):
        if i and i % block_size == 0:
            out.append('<span style="border-left:2px solid #333;margin:0 2px"></span>')
        bg = "#d6f5d6" if s else "#ffd9b3"
        out.append(f'<span title="#{i}" style="background:{bg};padding:1px 2px;margin:1px;border-radius:3px;'
                   f'font-family:monospace;font-size:12px;display:inline-block">{html.escape(tok)}</span>')
    return '<div class="token-view" style="line-height:1.9">' + "".join(out) + "</div>"
