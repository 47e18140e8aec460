"""LLM Inference Lab: entry point. Page config, the shared sidebar, navigation; nothing else."""
import streamlit as st

from lib.ui.boot import leave_pages_folder_mode

leave_pages_folder_mode()
st.set_page_config(page_title="LLM Inference Lab", page_icon="🧪", layout="wide")

from lib.ui import shell  # noqa: E402  (after page config)

page = shell.navigation()
shell.sidebar()
shell.model_status()
page.run()
