"""The app shell: sidebar (language, model, device, prompt presets) and the navigation over
every concept page, grouped as in CONCEPTS.md. Called by app.py on every run."""
from __future__ import annotations

import streamlit as st

from lib.model import model_loader
from lib.ui import runtime
from lib.concepts.catalog import CONCEPTS, GROUPS, PAGES_DIR
from lib.ui.i18n import LANGS, current_lang, publish_lang, texts
from lib.ui import live_class, live_room, present, responsive

LANG_NAMES = {"en": "English", "id": "Bahasa Indonesia"}
# Teaching pages (not concepts): lessons, the life of a token, the glossary (issue 14).
TEACHING_PAGES = (("lessons", "🎓"), ("life-of-a-token", "🧬"), ("glossary", "📖"), ("model-check", "🔬"))
PRESETS = ("preset_capital", "preset_story", "preset_code", "preset_id", "preset_list")


def _set_lang():
    st.session_state["lang"] = st.session_state["lang_choice"]


def _use_preset():
    key = st.session_state.get("preset_choice")
    if key in PRESETS:
        st.session_state["preset_prompt"] = texts("common")(key)
        st.session_state["preset_choice"] = None


def _toggle_present():
    present.set_presenter_view(st.session_state["present_toggle"])


def _load_other():
    st.session_state["model_source"] = st.session_state.get("model_other_text", "").strip() or runtime.SERVER_SOURCE


def sidebar() -> None:
    lang = current_lang()
    c = texts("common")
    live_class.join_from_url()          # ?room= / ?key= (issue 30), before the presenter toggle
    with st.sidebar:
        st.session_state.setdefault("lang_choice", lang)
        st.session_state["lang_choice"] = lang
        st.radio(c("language"), LANGS, key="lang_choice", format_func=LANG_NAMES.get,
                 horizontal=True, on_change=_set_lang)
        st.session_state["present_toggle"] = present.presenter_view()   # the URL and the toggle agree
        st.toggle(c("present_toggle"), key="present_toggle", on_change=_toggle_present, help=c("present_help"))
        st.selectbox(c("presets"), (None,) + PRESETS, key="preset_choice",
                     format_func=lambda k: c("preset_none") if k is None else c(k), on_change=_use_preset)
        with st.expander(f"{c('model')} · {c('device')}"):
            kind = st.radio(c("model"), ("bundled", "other"),
                            format_func=lambda k: c("model_bundled") if k == "bundled" else c("model_other"),
                            key="model_kind")
            if kind == "other":
                st.text_input(c("model_other_label"), key="model_other_text", help=c("model_other_help"))
                st.button(c("model_load"), on_click=_load_other)
            elif st.session_state.get("model_source", runtime.SERVER_SOURCE) != runtime.SERVER_SOURCE:
                st.session_state["model_source"] = runtime.SERVER_SOURCE
            devices = model_loader.available_devices()
            st.session_state.setdefault("device", model_loader.default_device())
            st.selectbox(c("device"), devices, key="device")
            st.session_state.setdefault("dtype", runtime.SERVER_DTYPE)
            if "dtype_reset" in st.session_state:        # a refused dtype (runtime.model) goes back
                st.session_state["dtype"] = st.session_state.pop("dtype_reset")
            st.selectbox(c("dtype"), tuple(runtime.DTYPES), key="dtype", help=c("dtype_help"))
    responsive.apply_css()                  # phones: wrapped chart titles, tables that scroll
    live_room.show(lang)                # the live class: sidebar block, join panel / class bar
    if present.presenter_view():
        present.apply_css()
    # Keep the language in the URL when it is not the default, so links keep it.
    publish_lang(lang)


def model_status() -> None:
    """Load (or fetch) the session's model and say which one is in use."""
    c = texts("common")
    m = runtime.model()
    st.sidebar.caption(c("loaded_model", name=runtime.model_name(m), device=m.device, seconds=m.load_seconds))


def navigation():
    c = texts("common")
    home = st.Page(str(PAGES_DIR / "home.py"), title=c("home"), icon="🏠", url_path="home", default=True)
    teaching = [st.Page(str(PAGES_DIR / f"{slug}.py"), title=c(f"page_{slug}"), icon=icon, url_path=slug)
                for slug, icon in TEACHING_PAGES if (PAGES_DIR / f"{slug}.py").exists()]
    sections = {"": [home] + teaching}
    for g in GROUPS:
        pages = [st.Page(str(x.page_file), title=c(f"concept_{x.slug}"), icon=x.icon, url_path=x.slug)
                 for x in CONCEPTS if x.group == g and x.exists]
        if pages:
            sections[c(f"group_{g}")] = pages
    page = st.navigation(sections, expanded=True)     # every page listed: no "View 13 more"
    st.session_state[live_class.S_PAGE] = page.url_path   # a poll for another page is stale (live_follow)
    return page
