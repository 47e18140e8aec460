"""The presenter view (`?view=present`, or the sidebar toggle): one flag per session, kept in
step with the URL both ways.

- A link with `?view=present` turns it on for the session (`presenter_view()`).
- The sidebar toggle (lib/ui/shell.py) calls `set_presenter_view(on)`, which writes or
  removes `view=present` in the URL, so the address bar always says what the screen shows.
- Pages read `presenter_view()`; `PRESENT_CSS` makes the type projector-sized (text, widget
  labels, the slider's values, Play and the step buttons, token chips: `.token-view` and inline
  code, chart titles: `.fig-title`; st.dataframe, drawn on a canvas that CSS fonts do not
  reach, is zoomed x1.35 inside a box narrowed by as much, so the grid measures and fills the
  column) and keeps tables and figures inside the width (1280x720 projectors); the charts themselves are enlarged by lib/ui/responsive.py (`shown_figure(present=True)`)."""
from __future__ import annotations

import streamlit as st

VIEW_PARAM, PRESENT = "view", "present"
STATE_KEY = "present"

PRESENT_CSS = """<style>
.stMainBlockContainer { max-width: 100% !important; padding: 3.5rem 2rem 2rem 2rem !important; }
.stMarkdown p, .stMarkdown li, .stCaption p, .stAlert p { font-size: 1.35rem !important; line-height: 1.5 !important; }
h1 { font-size: 2.8rem !important; } h2, h3 { font-size: 2.0rem !important; }
.stMarkdown table { display: block; max-width: 100%; overflow-x: auto; font-size: 1.1rem !important; }
.stMarkdown td, .stMarkdown th { white-space: normal !important; word-break: break-word; }
[data-testid="stRadio"] label p, .stButton button p, [data-testid="stExpander"] summary p { font-size: 1.25rem !important; }
[data-testid="stDataFrame"], [data-testid="stTable"], .stPlotlyChart { max-width: 100% !important; }
[data-testid="stTable"] table { table-layout: fixed; width: 100% !important; }
[data-testid="stTable"] td, [data-testid="stTable"] th { white-space: normal !important; word-break: break-word;
  font-size: 1.1rem !important; }
[data-testid="stWidgetLabel"] p, [data-testid="stCheckbox"] label p, .stToggle label p { font-size: 1.3rem !important; }
[data-testid="stSliderThumbValue"], [data-testid="stSliderTickBar"] div { font-size: 1.2rem !important; }
.stButton button { min-height: 3rem; } .stButton button p { font-size: 1.3rem !important; }
.token-view { font-size: 1.6rem !important; line-height: 2.0 !important; }
.stMarkdown p code, .stMarkdown li code { font-size: 1.15rem !important; }
[data-testid="stElementContainer"]:has(> [data-testid="stFullScreenFrame"] [data-testid="stDataFrame"]) {
  zoom: 1.35; width: calc(100% / 1.35) !important; max-width: calc(100% / 1.35) !important; }
.token-view span { font-size: inherit !important; }
.fig-title { font-size: 1.55rem !important; margin-top: 0.8rem !important; }
[data-testid="stTooltipContent"] p { font-size: 1.2rem !important; }
</style>"""


def presenter_view() -> bool:
    """True when this session shows the presenter view. `?view=present` in the URL turns it on;
    the sidebar toggle turns it on or off (and rewrites the URL to match)."""
    if st.query_params.get(VIEW_PARAM) == PRESENT:
        st.session_state[STATE_KEY] = True
    on = bool(st.session_state.get(STATE_KEY, False))
    sync_url(on)
    return on


def sync_url(on: bool) -> None:
    """Write `view=present` into the URL when on, remove it when off (page switches drop it)."""
    if on and st.query_params.get(VIEW_PARAM) != PRESENT:
        st.query_params[VIEW_PARAM] = PRESENT
    elif not on and VIEW_PARAM in st.query_params:
        del st.query_params[VIEW_PARAM]


def set_presenter_view(on: bool) -> None:
    st.session_state[STATE_KEY] = bool(on)
    sync_url(bool(on))


def apply_css() -> None:
    """Large type and width-fitting tables; call once per run when presenter_view() is True."""
    st.html(PRESENT_CSS)
