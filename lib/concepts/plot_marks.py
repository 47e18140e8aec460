"""Figures a projector can read: labelled reference lines and decade ticks on log axes, titles
that wrap instead of running off the page, and columns of numbers that read alike.

Plotly's `add_vline` / `add_hline(annotation_text=...)` place the label at the line's value in
the axis's own units, which on a log axis are log10 units: the label of a line at 2 lands at
10^2 = 100, and one at 4,096 falls off the chart. These draw the line the usual way and put
the label at log10(value).

`decade_axis` makes an axis log-scale with ticks only at powers of ten (or, over less than two
decades, at a few round values written in full), never Plotly's minor labels ("2 3 4", "5") or
SI suffixes ("100µ"). `significant_spec` writes a column of numbers (a table, heatmap cells)
with the same number of significant digits in every row. `wrap_title` breaks a long title onto
lines (Plotly never wraps one)."""
from __future__ import annotations

import math
import textwrap

import plotly.graph_objects as go


VLINE_LABEL, LABEL_STEP_PX = "log_x_vline", 13


def significant_spec(value, digits: int = 2) -> str:
    """A format spec that writes `value` with `digits` significant digits and keeps its trailing
    zeros, so a column of small values reads alike (issue 33: ".2g" wrote 0.0001 beside
    0.00014): 0.0001 -> 0.00010, 0.00014 -> 0.00014, 35.2 -> 35, 1234.5 -> 1,234; below 1e-4 -> 1.0e-05; 0 -> 0."""
    if not math.isfinite(value):
        return ""
    if value == 0:
        return ".0f"
    if abs(value) < 1e-4:
        return f".{digits - 1}e"
    return f",.{max(0, digits - 1 - math.floor(math.log10(abs(value))))}f"


def log_x_vline(fig: go.Figure, x: float, text: str, bottom: bool = False, **line) -> None:
    """A vertical line at x on a log x axis, labelled at its top (or foot). Each further label
    on the same side sits LABEL_STEP_PX higher than the one before, so labels of lines close
    together (on a phone's narrow chart) stack instead of printing into one another."""
    x_vline(fig, x, text, bottom=bottom, log=True, **line)


def x_vline(fig: go.Figure, x: float, text: str, bottom: bool = False, log: bool = False,
            xanchor: str = "left", **line) -> None:
    """A vertical line at x labelled above the plot (or inside it, at its foot), the label
    running to the right of the line (`xanchor="left"`) or to its left ("right"); `log`: the x
    axis is a log axis. Each further label on the same side sits LABEL_STEP_PX higher than the
    one before: labels of lines close together stack instead of printing into one another (a
    phone's chart is ~300 px wide), and above the plot no curve or bar runs through them."""
    fig.add_vline(x=x, **line)
    y = 0 if bottom else 1
    before = sum(1 for a in fig.layout.annotations if a.name == VLINE_LABEL and a.y == y)
    fig.add_annotation(x=math.log10(x) if log else x, xref="x", y=y, yref="paper", text=text, name=VLINE_LABEL,
                       showarrow=False, xanchor=xanchor, yanchor="bottom", yshift=LABEL_STEP_PX * before,
                       font=dict(size=11, color=line.get("line_color", "grey")))


def label_rows(xs, span: float, min_gap: float = 0.3) -> list[int]:
    """The row (0 = nearest the axis) of a label at each x of `xs` so that two labels on one
    row are at least min_gap * span apart: labels of lines close together stack one above the
    other (LABEL_STEP_PX per row) instead of printing into one another on a phone's chart (a
    label of ~14 characters is ~90 px, 0.3 of a phone's ~300 px plot)."""
    rows, last = [0] * len(xs), []          # last[r]: x of the latest label on row r
    for i in sorted(range(len(xs)), key=lambda i: xs[i]):
        r = next((r for r, x in enumerate(last) if xs[i] - x >= min_gap * span), len(last))
        last[r:r + 1] = [xs[i]]
        rows[i] = r
    return rows


LABEL_BG = "rgba(255,255,255,0.85)"      # behind a line's label: a curve crossing it passes under the text


def log_y_hline(fig: go.Figure, y: float, text: str, at: str = "right", **line) -> None:
    """A horizontal line at y on a log y axis, labelled above its right end (`at="left"`: its
    left end, where the figure's curves are known to stay away from it), on a white box so
    that a curve crossing the label passes under it instead of striking it through."""
    fig.add_hline(y=y, **line)
    fig.add_annotation(y=math.log10(y), yref="y", x=1 if at == "right" else 0, xref="paper", text=text,
                       showarrow=False, xanchor=at, yanchor="bottom", bgcolor=LABEL_BG, borderpad=1,
                       font=dict(size=11, color=line.get("line_color", "grey")))


# ---- log axes a projector can read -----------------------------------------------------------------
MAX_DECADE_TICKS = 8          # more decades than this: label every 2nd, 5th, ... power of ten
FULL_DECADES = (-3, 5)        # decades written in full (0.001 ... 100,000); beyond them 10^k
ROUND_STEPS = ((1, 2, 5), (1, 2, 3, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9))   # narrow axes: 1-2-5 first


def _positive(values) -> list[float]:
    """Every finite positive number in `values` (nested lists, tuples and arrays flattened)."""
    try:
        items = iter(values)
    except TypeError:                                   # one number (None: nothing)
        return [float(values)] if values is not None and math.isfinite(float(values)) and float(values) > 0 else []
    return [x for v in items for x in _positive(v)]


def _in_full(m: int, k: int, fmt) -> str:
    """m * 10^k written in full in the page's language: 20, 5,000 / 5.000, 0.05 / 0,05."""
    return fmt(m * 10 ** k, ",") if k >= 0 else fmt(m * 10.0 ** k, f".{-k}f")


def _power(m: int, k: int) -> str:
    """m * 10^k as Plotly's exponentformat="power" writes it: 1, 10, 10², 10⁻⁶ (2·10⁻⁶)."""
    p = "1" if k == 0 else "10" if k == 1 else f"10<sup>{'−' if k < 0 else ''}{abs(k)}</sup>"
    return p if m == 1 else f"{m}·{p}"


def decade_ticks(values, fmt=format) -> tuple[list[float], list[str]]:
    """(tick values, tick labels) for a log axis over `values`: the powers of ten covering
    them when they span two decades or more and three powers of ten lie among them (every
    decade, or every 2nd, 5th, ... so that at most MAX_DECADE_TICKS remain); otherwise round
    values m * 10^k with m from the first of ROUND_STEPS that gives three ticks inside the data. Labels are written in full
    (`fmt(x, spec)`, the page's number writer) while every decade lies in FULL_DECADES, else
    as powers (10⁻⁶), never SI suffixes. No positive value: no ticks."""
    vals = _positive(values)
    if not vals:
        return [], []
    lo, hi = min(vals), max(vals)
    k0, k1 = math.floor(math.log10(lo) + 1e-9), math.ceil(math.log10(hi) - 1e-9)
    inside = [k for k in range(k0, k1 + 1) if lo * (1 - 1e-9) <= 10.0 ** k <= hi * (1 + 1e-9)]
    if math.log10(hi / lo) >= 2 - 1e-9 and len(inside) >= 3:
        for step in (1, 2, 3, 5, 10, 20, 50, 100):
            start, stop = k0 // step * step, -(-k1 // step) * step        # multiples of step around the data
            if (stop - start) // step + 1 <= MAX_DECADE_TICKS:
                break
        marks = [(1, k) for k in range(start, stop + 1, step)]
    else:
        marks = []
        for ms in ROUND_STEPS:
            marks = [(m, k) for k in range(k0 - 1, k1 + 1) for m in ms if lo * (1 - 1e-9) <= m * 10.0 ** k <= hi * (1 + 1e-9)]
            if len(marks) >= 3:
                break
        marks = marks or [(1, k) for k in range(k0, k1 + 1)]
    full = all(FULL_DECADES[0] <= k <= FULL_DECADES[1] for _, k in marks)
    return ([m * 10.0 ** k for m, k in marks],
            [_in_full(m, k, fmt) if full else _power(m, k) for m, k in marks])


def decade_axis(fig: go.Figure, axis: str, values, fmt=format, **where) -> None:
    """Make `axis` ("x" or "y") of `fig` a log axis labelled as `decade_ticks(values, fmt)`
    says (`values`: the data drawn on it; nothing else about the data changes), with
    exponentformat="power" and no minor labels. `where`: row / col / secondary_y, passed to
    update_xaxes / update_yaxes."""
    tickvals, ticktext = decade_ticks(values, fmt)
    update = fig.update_xaxes if axis == "x" else fig.update_yaxes
    ticks = dict(tickmode="array", tickvals=tickvals, ticktext=ticktext) if tickvals else {}
    update(type="log", exponentformat="power", **ticks, **where)


# ---- titles ------------------------------------------------------------------------------------------
TITLE_CHARS = 100       # about one line of a figure's bold title (~7.6 px a character) in the ~820 px column at 1,280 px


def wrap_title(fig: go.Figure, chars: int = TITLE_CHARS) -> int:
    """Break the title of `fig` onto lines of at most `chars` characters at spaces (a title
    already holding <br> or other markup is left as it is). Returns its number of lines, so
    the caller can give it room (0: no title)."""
    text = fig.layout.title.text
    if not text:
        return 0
    if "<" not in text and len(text) > chars:
        text = "<br>".join(textwrap.wrap(text, chars))
        fig.update_layout(title_text=text)
    return text.count("<br>") + 1
