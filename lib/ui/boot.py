"""Work around Streamlit's first-session deep-link quirk (see FACTS.md).

While `pages/` exists, Streamlit starts every new server in the old "pages folder" mode
until some session runs `st.navigation`. A student whose shared link (/temperature) is the
first visit after the server wakes up would get the folder navigation instead of ours. Every
script (app.py and each page) calls `leave_pages_folder_mode()` first: if Streamlit is still
in folder mode it switches it off and reruns, and the rerun goes through app.py's
`st.navigation`, which resolves the same URL to our page.

This only works because every page FILE is named exactly like its URL slug
(`pages/top-k-top-p.py` for `/top-k-top-p`): folder mode identifies a page by its file name,
`st.navigation` by its url_path, and the rerun carries that identity from one to the other.
(AppTest starts every run in folder mode, so the AppTest suite checks this on every page.)

The flag is process-wide but Streamlit reads it once per run, when the run starts: sessions that
started together on a fresh server all start in folder mode, the first one to get here switches
it off, and the others then found it off and went on as folder-mode pages, without app.py's
shell (no `?room=`, no language, no sidebar; 2 of 3 students joining at once were not in the
class). So a page (`page=True`) also reruns when its own run started in folder mode: Streamlit's
folder-mode navigation lists the entry script itself as a page, ours never does.
"""
from __future__ import annotations

import streamlit as st


def _run_started_in_folder_mode() -> bool:
    """Whether this run's navigation is Streamlit's folder mode (it lists app.py as a page)."""
    import os

    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return False
    entry = os.path.realpath(ctx.pages_manager.main_script_path)
    return any("url_pathname" in p and os.path.realpath(str(p.get("script_path", ""))) == entry
               for p in ctx.pages_manager.get_pages().values())


def leave_pages_folder_mode(page: bool = False) -> None:
    """Rerun through app.py's `st.navigation` when Streamlit is (or this run started) in folder
    mode; `page=True` from a page script (app.py itself cannot tell before its navigation)."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory or (page and _run_started_in_folder_mode()):
        PagesManager.uses_pages_directory = False
        st.rerun()
