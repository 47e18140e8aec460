"""Following the lecturer in a live class (issue 30): the student's class bar and its poll.

`follow_bar` (drawn atop every page by the shell) and its fragment `_poll_room` poll the room
every POLL_S s: when the room's version changed and its page/state differs from the one applied
last and from the one shown, the page's URL-bound widgets are forgotten and `st.switch_page`
opens the lecturer's page with the lecturer's parameters (lib/ui/state.py seeds widgets from the
URL). A poll that Streamlit runs for the page before the switch empties the page: it switches
again. Session state: lib/ui/live_class.py."""
from __future__ import annotations

import streamlit as st

from lib.concepts.catalog import PAGES_DIR
from lib.ui import live_class as live
from lib.ui.i18n import LANG_PARAM, current_lang, texts

POLL_S = 2.0


def _page_widget_keys(slug: str) -> list[str]:
    """The session-state keys of `slug`'s URL-bound widgets (`<slug>.<name>`, and the
    `<slug>.<name>.shown` that lib/ui/state.py keeps), not its predictions (`<slug>.predict.*`)."""
    out = []
    for k in st.session_state.keys():
        if not isinstance(k, str) or not k.startswith(slug + "."):
            continue
        rest = k[len(slug) + 1:].split(".")
        if len(rest) == 1 or (len(rest) == 2 and rest[1] == "shown"):
            out.append(k)
    return out


def go_to(slug: str, params: dict) -> None:
    """Open the lecturer's page in the lecturer's state (the student keeps their language)."""
    for k in _page_widget_keys(slug) + [f"lessons.published.{n}" for n in ("lesson", "step")] + [live.S_OPEN, live.S_ON_PAGE]:
        st.session_state.pop(k, None)
    query = {k: v for k, v in params.items() if k not in live.NOT_PAGE_STATE}
    query[live.ROOM_PARAM] = live.room_code()
    query[live.SID_PARAM] = live.session_id()
    if current_lang() != "en":
        query[LANG_PARAM] = current_lang()
    st.switch_page(str(PAGES_DIR / f"{slug}.py"), query_params=query)


def _explore(on: bool) -> None:
    st.session_state[live.S_FOLLOW] = not on
    st.session_state.pop(live.S_APPLIED, None)           # back to the class: go to its page again
    st.session_state.pop(live.S_SEEN, None)


def follow_bar() -> None:
    """The student's class bar atop every page (phones hide the sidebar); `_poll_room` polls."""
    if live.room_code() is None or live.is_presenter():
        return
    from lib.ui.glossary import page_title
    t, view = texts("live_class"), live.room_view()
    if view is None:
        st.rerun(scope="app")                       # the room is gone: the page without it
    follow = live.is_following()
    where = t("now_in_class", page=page_title(view.slug)) if view.slug else t("waiting_page")
    st.session_state["live.room_page"], st.session_state[live.S_BAR] = where, view.slug
    with st.container(border=True, key="live-bar"):
        a, b = st.columns([3, 1], vertical_alignment="center")
        a.markdown(f"**🎓 {t('class_code', code=view.code)}** · {t('following') if follow else t('exploring')}  \n{where}")
        if follow:
            b.button(t("explore"), key="live-explore", on_click=_explore, args=(True,), width="stretch")
        else:
            b.button(t("back"), key="live-back", on_click=_explore, args=(False,), type="primary", width="stretch")
    _poll_room()


@st.fragment(run_every=POLL_S)
def _poll_room() -> None:
    """Follows the room; draws one empty element, not the bar (200 bars redrawn: a busy server)."""
    st.empty()
    view = live.room_view()
    if view is None:
        st.rerun(scope="app")                       # the room is gone: the page without it
    if live.is_following() and view.slug and _emptied_by_a_stale_poll():
        go_to(view.slug, dict(view.params))         # draw the page again
    if live.is_following() and view.version != st.session_state.get(live.S_SEEN):
        st.session_state[live.S_SEEN] = view.version
        if _reopened(view) or _closed(view):
            st.rerun(scope="app")
        target = (view.slug, tuple(sorted(view.params.items())))
        if view.slug and target != st.session_state.get(live.S_APPLIED):
            st.session_state[live.S_APPLIED] = target
            if target != st.session_state.get(live.S_ON_PAGE):     # not what the page shows already
                go_to(view.slug, dict(view.params))
    if view.slug != st.session_state.get(live.S_BAR):
        st.rerun(scope="app")                       # the bar names another page: redraw it


def _page_of_this_run() -> str | None:
    """The url path of the page this run belongs to, as the browser asked for it (None outside
    a Streamlit session)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    page = ctx.pages_manager.get_pages().get(ctx.page_script_hash) if ctx is not None else None
    return None if page is None else page.get("url_pathname")


def _emptied_by_a_stale_poll() -> bool:
    """Whether this poll ran for another page than the one the last whole run drew: the browser's
    2 s timer asked for it before it learnt of the switch (`go_to`), Streamlit ran it after the
    new page, and the browser then shows the class bar above an empty page. (Eight students on
    a busy server: one to three of them, on two moves out of three, 2026-12-06.)"""
    here = _page_of_this_run()
    return here is not None and here != st.session_state.get(live.S_PAGE)


def _closed(view) -> bool:
    """Whether a question open on this page was revealed (or closed) since (redrawn revealed)."""
    open_ = st.session_state.get(live.S_OPEN, {})
    done = [q for q, phase in open_.items() if view.is_revealed(q, phase)]
    for q in done:
        open_.pop(q)
    return bool(done)


def _reopened(view) -> bool:
    """Whether a question shown revealed was reset: its answer is forgotten, redrawn open."""
    shown = st.session_state.get(live.S_SHOWN, {})
    again = [q for q in shown if q not in view.revealed]
    for q in again:
        key = shown.pop(q)
        for k in (key, key + ".sent", key + ".err"):
            st.session_state.pop(k, None)
    return bool(again)
