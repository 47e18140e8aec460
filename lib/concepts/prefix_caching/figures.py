"""Figures for the prefix-caching page (data in, Plotly figure out; no model calls)."""
from __future__ import annotations

import plotly.graph_objects as go

HIT, MISS, PARTIAL, CACHED = "#54A24B", "#E45756", "#BBBBBB", "#4C78A8"


def hash_chain(rows_cached: list[str], rows: list, labels: dict[str, str]) -> go.Figure:
    """Two rows of blocks: the cached prompt's chained hashes, and the new prompt's blocks
    coloured hit / miss / partial (never cached), each labelled with its hash."""
    fig = go.Figure()
    for i, h in enumerate(rows_cached):
        _block(fig, i, 1, CACHED, f"#{i}<br>{h[:6]}")
    for r in rows:
        color = HIT if r.hit else PARTIAL if not r.hash_new else MISS
        word = labels["hit"] if r.hit else labels["partial"] if not r.hash_new else labels["miss"]
        _block(fig, r.index, 0, color, f"#{r.index}<br>{r.hash_new[:6] or '—'}<br>{word}")
        if r.index > 0:
            fig.add_annotation(x=r.index - 0.03, y=0.45, ax=r.index - 0.17, ay=0.45, xref="x", yref="y",
                               axref="x", ayref="y", showarrow=True, arrowhead=2, arrowsize=0.8, text="")
    n = max(len(rows_cached), len(rows), 1)
    fig.update_xaxes(range=[-0.1, n], tickvals=[i + 0.4 for i in range(n)], ticktext=[str(i) for i in range(n)],
                     title_text=labels["x"])
    fig.update_yaxes(range=[-0.1, 2.0], tickvals=[0.45, 1.45], ticktext=[labels["new"], labels["cached"]])
    fig.update_layout(title=labels["title"], height=300, plot_bgcolor="white", showlegend=False)
    return fig


def _block(fig, x, y, color, text):
    fig.add_shape(type="rect", x0=x, x1=x + 0.8, y0=y, y1=y + 0.9, fillcolor=color, line=dict(color="#666"))
    fig.add_annotation(x=x + 0.4, y=y + 0.45, text=text, showarrow=False, font=dict(size=10, color="white"))


def timing_figure(names: list[str], seconds: list[float], labels: dict[str, str]) -> go.Figure:
    """Median prefill seconds of each run (bars), labelled in ms by Plotly (so the page's
    separators apply: 1,234 ms / 1.234 ms)."""
    fig = go.Figure(go.Bar(x=seconds, y=names, orientation="h", customdata=[s * 1000 for s in seconds],
                           texttemplate="%{customdata:,.0f} ms", textposition="auto", marker_color=["#888888", HIT]))
    fig.update_layout(title=labels["title"], xaxis_title=labels["x"], height=230)
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
