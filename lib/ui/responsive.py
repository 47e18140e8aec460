"""Pages that fit a phone (390 px) and a projector (1280x720): the CSS every run applies and
the figure layout that works at any width (issue 33).

The server cannot know the screen's width, so a figure is laid out to work at every width:
- its title is not Plotly's (an SVG line that never wraps and is cut off on a phone) but an
  HTML line above the chart (`title_html`) that wraps like any text; the downloaded HTML keeps
  Plotly's own title;
- a legend sits below the plot (`legend_below`), horizontal, so it wraps onto more lines
  instead of taking half of a phone's width at the right, and under the x axis's tick labels
  as Plotly turns long ones on a phone (`legend_clear_of_axis`), not at a fixed y on them;
- a label above the plot (a subplot title, add_vline's "top" label) gets a top margin;
- axes use automargin (long tick labels push the margin instead of running off the chart);
- axis and panel titles too long for a phone are broken onto lines (`wrap_for_phones`), a long
  legend below gets the height it needs, and a figure of three or more panels side by side
  or two heatmaps (`needs_width`) is drawn as with `wide=True` (below).
The rest is CSS (`RESPONSIVE_CSS`): tables scroll sideways inside their own box, long words
break, and under 640 px the column padding and headings shrink and a chart drawn with
`page.figure(..., wide=True)` (the beam tree: a label at every node) keeps WIDE_PX and
scrolls sideways in its own box (a ⇆ above it says so) instead of crowding its labels into
one another.
"""
from __future__ import annotations

import html
import re
import textwrap

import plotly.graph_objects as go
import streamlit as st

from lib.ui.figure_room import (LEGEND_ROW_PX, LINE_PX, PHONE_PLOT_PX, TICK_CHAR_PX, _axes,  # noqa: F401
                                _legend_rows, legend_clear_of_axis, x_axis_px)

FIG_TITLE_CLASS = "fig-title"
WIDE_KEY, WIDE_PX = "wide-fig-", 720        # page.figure(wide=True): st.container(key=WIDE_KEY...) on a phone

# Plotly's title markup that HTML reads the same way; anything else in a title is shown as text.
_KEPT_TAGS = re.compile(r"</?(?:b|i|em|sup|sub)>|<br\s*/?>", re.IGNORECASE)

RESPONSIVE_CSS = """<style>
.fig-title { font-weight: 600; font-size: 1.02rem; line-height: 1.35; margin: 0.4rem 0 0 0;
  overflow-wrap: anywhere; }
.stMarkdown table { display: block; max-width: 100%; overflow-x: auto; }
[data-testid="stTable"] { max-width: 100%; overflow-x: auto; }
.stMarkdown p, .stMarkdown li, .stAlert p, .stCaption p { overflow-wrap: break-word; }
.stMarkdown code { white-space: pre-wrap; overflow-wrap: anywhere; }
@media (max-width: 640px) {
  .stMainBlockContainer { padding-left: 0.9rem !important; padding-right: 0.9rem !important; }
  h1 { font-size: 1.75rem !important; } h2 { font-size: 1.4rem !important; } h3 { font-size: 1.2rem !important; }
  .stMarkdown p, .stMarkdown li { overflow-wrap: anywhere; }
  .fig-title { font-size: 0.95rem; }
  [data-testid="stCodeBlock"] pre { max-width: 100%; overflow-x: auto; }
  [class*="st-key-WIDE_KEY"] { overflow-x: auto; }
  [class*="st-key-WIDE_KEY"] > [data-testid="stElementContainer"] { min-width: WIDE_PXpx; }
  [class*="st-key-WIDE_KEY"]::before { content: "⇆"; align-self: flex-start; position: sticky; left: 0;
    color: #888; font-size: 1.1rem; line-height: 1; }
}
</style>""".replace("WIDE_KEY", WIDE_KEY).replace("WIDE_PX", str(WIDE_PX))


def apply_css() -> None:
    """The responsive CSS; call once per run (lib/ui/shell.py does)."""
    st.html(RESPONSIVE_CSS)


def title_html(text: str) -> str:
    """`text` (a Plotly title: plain text with <br>, <b>, <sup>, ...) as a safe HTML line:
    the tags HTML reads the same way are kept, every other character escaped (a token in a
    title may hold '<')."""
    out, last = [], 0
    for m in _KEPT_TAGS.finditer(text):
        out += [html.escape(text[last:m.start()]), m.group(0).lower()]
        last = m.end()
    out.append(html.escape(text[last:]))
    return f'<div class="{FIG_TITLE_CLASS}">{"".join(out)}</div>'


def legend_below(fig: go.Figure) -> None:
    """Move a legend Plotly would draw at the right (its default, or one placed at x >= 1) to
    a horizontal row under the plot, below the x axis title, where it wraps onto more rows on
    a phone instead of taking half the width. Legends a figure placed elsewhere (most figures
    already put theirs below) stay where they are."""
    leg = fig.layout.legend
    if leg.orientation == "h" or (leg.x is not None and leg.x < 1):
        return
    fig.update_layout(legend=dict(orientation="h", x=0, xanchor="left", y=-0.25, yanchor="top"))


PHONE_CHARS = 40        # characters of a panel title (16 px) that fit across a phone's ~330 px plot
# An x axis title is 14 px, ~6 px a character (measured at 390 px: "token baru dalam satu forward
# (skala log)" is 243 px, centred on a ~290 px plot in a 361 px chart): it holds 1.1x a panel
# title's characters, 44, with room for wide letters (~6.5 px) on a phone.
# The server cannot know the screen's width, so a title wrapped for a phone is wrapped on a
# desktop too: wrapping only what a phone really cuts keeps "(skala log)" on one line there.
AXIS_TITLE_CHARS = 1.1
WIDE_PANELS = 3         # panels side by side from which a figure keeps WIDE_PX on a phone
PANEL_FILL = 0.8        # of a panel's share of `chars`: the y axes' labels and margins take the rest of the width
CHAR_PX = 7                        # an axis title's character width, px
X_AXIS_PX = 60                     # an x axis's tick labels and title under the plot, px
LEGEND_ROWS = 4                    # legend rows below the plot that the figure's height already holds


def _wrap(text: str | None, chars: int) -> str | None:
    """`text` broken at spaces onto lines of at most `chars` characters (text already holding
    markup such as <br> is left as it is)."""
    if not text or "<" in text or len(text) <= chars:
        return text
    return "<br>".join(textwrap.wrap(text, max(chars, 12)))


def panels_across(fig: go.Figure) -> int:
    """The most panels side by side in `fig` (x axes of one row: overlapping y domains)."""
    xs = [ax for ax in _axes(fig, "x") if ax.domain and ax.anchor and ax.anchor.startswith("y")]
    rows: dict[tuple, int] = {}
    for ax in xs:
        y = fig.layout["yaxis" + ax.anchor[1:]].domain or (0, 1)
        rows[tuple(y)] = rows.get(tuple(y), 0) + 1
    return max(rows.values(), default=1)


def needs_width(fig: go.Figure) -> bool:
    """A figure of WIDE_PANELS panels or more side by side, or of two heatmaps side by side (a
    token label on every row and column): on a phone its panel titles and tick labels would
    print into one another, so it keeps WIDE_PX and scrolls sideways (page.figure)."""
    n = panels_across(fig)
    return n >= WIDE_PANELS or (n >= 2 and any(tr.type == "heatmap" for tr in fig.data))


def wrap_for_phones(fig: go.Figure, chars: int = PHONE_CHARS) -> int:
    """Break the titles a phone would cut off onto lines (Plotly never wraps): an x axis title
    at `chars` (what fits across the plot; more for a figure kept WIDE_PX wide) times its
    panel's share of the width; a panel's title (make_subplots' annotation above the plot)
    likewise; a y axis title at the characters its plot height holds. A legend below moves
    down by the lines an x axis title gained. Returns the lines a panel title gained (the top
    margin needs LINE_PX for each)."""
    height = fig.layout.height or 450        # less the margins, the x axis (~X_AXIS_PX), a legend below
    plot_px = (height - (fig.layout.margin.t or 0) - (fig.layout.margin.b or 0) - X_AXIS_PX
               - LEGEND_ROW_PX * min(_legend_rows(fig), LEGEND_ROWS))
    below = 0                                 # lines an x axis title gained: a legend below moves down
    for ax in _axes(fig, "x"):
        d = ax.domain or (0, 1)
        before = ax.title.text
        ax.title.text = _wrap(before, int(chars * AXIS_TITLE_CHARS * (d[1] - d[0])))
        if ax.title.text != before:
            below = max(below, ax.title.text.count("<br>"))
    leg = fig.layout.legend
    if below and leg.orientation == "h" and leg.y is not None and leg.y < 0:
        leg.y -= LINE_PX * below / max(plot_px, 100)
    for ax in _axes(fig, "y"):
        d = ax.domain or (0, 1)
        ax.title.text = _wrap(ax.title.text, int(plot_px * (d[1] - d[0]) * 0.9 / CHAR_PX))
    panels = [ax.domain for ax in _axes(fig, "x") if ax.domain]
    gained = 0
    for a in fig.layout.annotations:
        if a.xref not in (None, "paper") or a.yref not in (None, "paper") or a.x is None or a.showarrow:
            continue
        share = min((d[1] - d[0] for d in panels if d[0] - 0.01 <= a.x <= d[1] + 0.01), default=1)
        text = _wrap(a.text, int(chars * share * (PANEL_FILL if len(panels) > 1 else 1)))
        if text != a.text:
            if (a.y or 0) >= 0.98:
                gained = max(gained, text.count("<br>"))
            a.text = text
    return gained


def _above_plot(a) -> bool:
    """An annotation at the plot's top edge or above it: in paper units, or in an axis's domain
    units (add_vline / add_vrect(annotation_position="top ...") label there), at y >= 0.98
    (Plotly does not widen the margin for an annotation: without room it is cut off)."""
    if a.yref in (None, "paper"):
        return (a.y or 0) >= 0.98
    return (a.yref or "").endswith(" domain") and (a.y or 0) >= 0.98 and a.yanchor != "top"


def _top_room(fig: go.Figure) -> int:
    """Pixels the top margin needs without a title: 12, or 34 (plus stacked labels' shifts)
    when something sits above the plot area (subplot titles, line labels, a legend on top)."""
    above = [a for a in fig.layout.annotations if _above_plot(a)]
    if not above and not (fig.layout.legend.y is not None and fig.layout.legend.y > 1):
        return 12
    return 34 + max((a.yshift or 0 for a in above), default=0)


PRESENT_FONT, PRESENT_SCALE = 20, 1.3        # projector: base font (px) and the factor for sized text
PRESENT_TICK = 17                            # a tick label's size there unless the figure sized it
PRESENT_HEIGHT = (440, 640)                  # a chart's height on a 1280x720 projector, px
PRESENT_PLOT_PX = 1000                       # a projector's plot width, px
PRESENT_CHARS = 100                          # a title's characters across a projector's chart at 20 px
AXIS_GROWTH = 1.4                            # the room under the plot (ticks, axis title) grows as the fonts
LEGEND_GAP_PX = 120                          # ... up to this many px between the plot and a legend below


def _grow(size, default: int) -> int:
    """A font size for the projector: one the figure chose times PRESENT_SCALE, else `default`."""
    return round(size * PRESENT_SCALE) if isinstance(size, (int, float)) else default


def _present(fig: go.Figure) -> None:
    """Projector sizes, set on every element explicitly (Streamlit's chart theme sizes ticks and
    annotations itself, so the layout's base font alone does not reach them): tick labels
    PRESENT_TICK (or the figure's own size x PRESENT_SCALE), axis titles, legends, hover labels
    and colour bars PRESENT_FONT, sized text marks (token labels, line labels) and annotations
    x PRESENT_SCALE (unsized ones, e.g. panel titles, PRESENT_FONT); the height stays within
    PRESENT_HEIGHT (the chart fits the screen) and a legend below moves down by the room the
    larger ticks and axis title take (AXIS_GROWTH, at most LEGEND_GAP_PX)."""
    fig.update_layout(font=dict(size=PRESENT_FONT), hoverlabel=dict(font_size=PRESENT_FONT),
                      legend=dict(font_size=PRESENT_FONT))
    for ax in _axes(fig, "x") + _axes(fig, "y"):
        ax.tickfont.size = _grow(ax.tickfont.size, PRESENT_TICK)
        ax.title.font.size = _grow(ax.title.font.size, PRESENT_FONT)
    for trace in fig.data:
        size = getattr(getattr(trace, "textfont", None), "size", None)
        if isinstance(size, (int, float)):
            trace.textfont.size = round(size * PRESENT_SCALE)
        if "colorbar" in trace:                          # heatmaps: the colour scale's numbers
            trace.colorbar.tickfont.size = _grow(trace.colorbar.tickfont.size, PRESENT_TICK)
    for a in fig.layout.annotations:
        a.font.size = _grow(a.font.size, PRESENT_FONT)
        if a.yshift:                                     # stacked line labels: rows as tall as the larger font
            a.yshift = round(a.yshift * PRESENT_SCALE)
    if any(a.yshift for a in fig.layout.annotations):
        fig.update_layout(margin_t=max(fig.layout.margin.t or 0, _top_room(fig) + 10))
    if any("text" in (getattr(tr, "mode", "") or "") and str(getattr(tr, "textposition", "")).startswith("top")
           for tr in fig.data):                          # labels above the top row's markers stay whole
        fig.update_layout(margin_t=max(fig.layout.margin.t or 0, 34))
    leg = fig.layout.legend
    if leg.orientation == "v" and leg.y is not None and leg.y < 0:    # a column below (for a phone): one row
        leg.orientation = "h"                                         # across the projector's width
    lo, hi = PRESENT_HEIGHT
    before = fig.layout.height or 450
    fig.update_layout(height=min(max(before, lo), hi))
    leg = fig.layout.legend
    if leg.orientation == "h" and leg.y is not None and leg.y < 0:    # under the larger axis, not on it
        edges = (fig.layout.margin.t or 0) + (fig.layout.margin.b or 0) + X_AXIS_PX
        gap = min(-leg.y * max(before - edges, 100) * AXIS_GROWTH, LEGEND_GAP_PX)     # px under the plot
        leg.y = -gap / max(fig.layout.height - edges, 100)


BAR_TEXT_PX = 10             # the smallest a bar's own label is drawn at


def bar_labels_readable(fig: go.Figure) -> None:
    """Plotly shrinks a bar's label to the bar's width: on a phone's 16 narrow bars "208" came
    out ~7 px beside "16" at 12 px. Every bar label of the figure is drawn at one size, at least
    BAR_TEXT_PX (`uniformtext`, mode "show"), unless the figure chose its own."""
    if fig.layout.uniformtext.minsize is None and any(tr.type == "bar" and (tr.text is not None or tr.texttemplate)
                                                      for tr in fig.data):
        fig.update_layout(uniformtext=dict(minsize=BAR_TEXT_PX, mode="show"))


def shown_figure(fig: go.Figure, present: bool = False, own_top: float | None = None,
                 wide: bool = False) -> tuple[go.Figure, str | None]:
    """(the figure to draw on the page, its title as HTML or None): a copy of `fig` without
    Plotly's title (and without the top margin the title needed: `own_top` is the margin the
    figure asked for itself, kept), its legend below (`legend_below`), automargin on every
    axis, titles a phone would cut wrapped (`wrap_for_phones`; `wide`: for WIDE_PX; `present`:
    for the projector's 1,280 px at its larger font, with the top margin to match), a long
    legend below given the height it needs, and with `present` the projector's sizes."""
    shown = go.Figure(fig)
    text = shown.layout.title.text
    shown.update_layout(title_text=None)
    legend_below(shown)
    chars = PRESENT_CHARS if present else PHONE_CHARS * WIDE_PX // 330 if wide else PHONE_CHARS
    gained = wrap_for_phones(shown, chars)                 # the projector's width is known: 1,280 px
    line = PRESENT_FONT + 6 if present else LINE_PX
    top = max(own_top or 0, _top_room(shown) + (10 if present and _top_room(shown) > 12 else 0) + line * gained)
    shown.update_layout(margin_t=top)
    rows = _legend_rows(shown)
    if rows > LEGEND_ROWS:     # room for a legend of one row per entry, drawn whole (no scrollbar)
        shown.update_layout(height=(shown.layout.height or 450) + LEGEND_ROW_PX * (rows - LEGEND_ROWS),
                            legend_maxheight=0.9)
    shown.update_xaxes(automargin=True)
    shown.update_yaxes(automargin=True)
    bar_labels_readable(shown)
    if present:
        _present(shown)
        legend_clear_of_axis(shown, PRESENT_PLOT_PX, TICK_CHAR_PX, PRESENT_FONT + 6, PRESENT_FONT + 8,
                             PRESENT_HEIGHT[1])
    else:
        legend_clear_of_axis(shown, PHONE_PLOT_PX * WIDE_PX // 390 if wide else PHONE_PLOT_PX)
    return shown, (title_html(text) if text else None)
