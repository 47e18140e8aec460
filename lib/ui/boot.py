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
"""
from __future__ import annotations

import streamlit as st


def leave_pages_folder_mode() -> None:
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
