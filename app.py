"""LLM Inference Lab: entry point. Start-of-server work, page config, the shared sidebar,
navigation; nothing else."""
# First: importing lib.ui starts the server's work once (lib/ui/__init__.py -> lib/ui/startup.py:
# heavy imports before any page code runs, thirty sessions may start at once).
from lib.ui.boot import leave_pages_folder_mode
import streamlit as st

from lib.serving import memo, prewarm, streamlit_adapter
from lib.ui.i18n import BAD_LANG
from lib.ui.present import presenter_view

# background pre-computation waits while a visitor's script runs; a computation this session no
# longer wants (a control moved again, the tab closed) stops between forward steps
with prewarm.visitor_running(streamlit_adapter.is_background_session()), streamlit_adapter.script_run():
    leave_pages_folder_mode()
    # the presenter view gives the projector the whole width: the sidebar starts collapsed
    st.set_page_config(page_title="LLM Inference Lab", page_icon="🧪", layout="wide",
                       initial_sidebar_state="collapsed" if presenter_view() else "auto")

    from lib.ui import shell  # (after page config)

    with memo.script_run():
        page = shell.navigation()
        shell.sidebar()
        shell.model_status()
        page.run()
    st.session_state.pop(BAD_LANG, None)  # a page without URL controls (home) shows no stale note later
