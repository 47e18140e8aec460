"""The room panel of the live class: start a class (presenter view), the join code with its
link and QR code (large enough to project), the private presenter link, ending the class, and
the student's sidebar lines (the class, its current page, nickname, leave).

`show(lang)` is the shell's one hook (lib/ui/shell.py), called on every run after the sidebar:
it writes the sidebar block and, at the top of the main area, either the join panel (the
lecturer, while "Show the join code" is on) or the student's class bar (live_follow.follow_bar,
polled by live_follow._poll_room).

Links: the join link is `<base>/?room=<CODE>` (`&lang=id` for an Indonesian class) and never
holds the secret; the presenter link adds `&key=<SECRET>`. `<base>` is LLM_LAB_PUBLIC_URL when
set (a server behind a proxy), else the address this browser used (st.context.url)."""
from __future__ import annotations

import os
from urllib.parse import urlencode, urlsplit

import streamlit as st

from lib.ui import live_class as live
from lib.ui import live_follow, present
from lib.ui.i18n import LANG_PARAM, texts

PUBLIC_URL_ENV = "LLM_LAB_PUBLIC_URL"
FALLBACK_BASE = "http://localhost:8501"
S_SHOW_JOIN = "live.show_join"
QR_PX = 420                      # the QR's side on a 1280x720 projector: readable from the back


def base_url() -> str:
    """The app's address as the students must type it: the configured public URL, else the
    scheme and host this browser used."""
    configured = os.environ.get(PUBLIC_URL_ENV, "").strip().rstrip("/")
    if configured:
        return configured
    url = st.context.url or ""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else FALLBACK_BASE


def join_link(base: str, code: str, lang: str) -> str:
    query = {live.ROOM_PARAM: code}
    if lang != "en":
        query[LANG_PARAM] = lang
    return f"{base}/?{urlencode(query)}"


def presenter_link(base: str, code: str, key: str, lang: str) -> str:
    return join_link(base, code, lang) + "&" + urlencode({live.KEY_PARAM: key})


def qr_svg_uri(link: str) -> str:
    """The QR code of `link` as an SVG data URI (segno; error correction M, a quiet zone of 4)."""
    import segno

    return segno.make(link, error="m", micro=False).svg_data_uri(scale=10, border=4, dark="#000", light="#fff")


def _start(lang: str) -> None:
    keys = live.store().create_room(lang)
    live.enter(keys.code, keys.secret)
    st.session_state[S_SHOW_JOIN] = True


def _end() -> None:
    try:
        live.store().end(live.room_code(), live.secret())
    finally:
        live.leave(note=("ended", live.room_code() or ""))


def _leave() -> None:
    live.leave()


def _sidebar(t, lang: str) -> None:
    code = live.room_code()
    if code is None:
        if present.presenter_view():
            st.button(f"🎓 {t('start')}", key="live-start", on_click=_start, args=(lang,), help=t("start_help"),
                      type="primary", width="stretch")
        return
    if live.is_presenter():
        st.markdown(t("presenting", code=code))
        st.toggle(t("show_join"), key=S_SHOW_JOIN)
        with st.expander(f"🔑 {t('presenter_link')}"):
            st.caption(t("presenter_link_help"))
            st.code(presenter_link(base_url(), code, live.secret(), lang), language=None, wrap_lines=True)
        st.button(t("end"), key="live-end", on_click=_end, help=t("end_help"), icon="⏹️")
        return
    st.markdown(f"**🎓 {t('class_code', code=code)}**  \n{st.session_state.get('live.room_page', '')}")
    st.text_input(t("nickname"), key=live.S_NICK, max_chars=20, help=t("nickname_help"))
    st.button(t("leave"), key="live-leave", on_click=_leave)


def join_panel(t, lang: str) -> None:
    """The code, the link and the QR code, sized for a projector."""
    code = live.room_code()
    link = join_link(base_url(), code, lang)
    with st.container(border=True, key="live-join"):
        left, right = st.columns([3, 2], vertical_alignment="center")
        with left:
            st.markdown(f"## 🎓 {t('join_title')}")
            st.markdown(t("join_steps"))
            st.markdown(f"{t('join_code_label')}: <span style='font-size:4.5rem;font-weight:700;"
                        f"letter-spacing:0.35rem;font-family:monospace'>{code}</span>", unsafe_allow_html=True)
            st.markdown(f"<span style='font-size:1.6rem'>{link}</span>", unsafe_allow_html=True)
        right.markdown(f"<img src='{qr_svg_uri(link)}' alt='QR {code}' data-testid='live-qr' "
                       f"style='width:min(92%,{QR_PX}px);image-rendering:pixelated'>", unsafe_allow_html=True)


def show(lang: str) -> None:
    """The shell's hook: sidebar block, then the join panel or the student's class bar."""
    t = texts("live_class")
    with st.sidebar:
        _sidebar(t, lang)
    live.show_note()
    if live.is_presenter():
        if st.session_state.get(S_SHOW_JOIN):
            join_panel(t, lang)
    elif live.room_code() is not None:
        live_follow.follow_bar()
