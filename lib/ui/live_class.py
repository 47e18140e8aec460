"""The live class in the app (issue 30): who this session is in a room, joining by link, and
following the lecturer.

Session state, per browser tab: `live.room` the room code this session is in (a student or the
lecturer); `live.key` the presenter secret, lecturer only (`?key=` is read once and removed, so
a projected address bar does not show it); `live.follow` False after "Explore on my own".

A student follows through `follow_bar` (drawn by the page) and its fragment `_poll_room`,
polling the room every POLL_S s: when the room's version changed and its page/state differs from
the one applied last and from the one shown, the page's URL-bound widgets are forgotten and
`st.switch_page` opens the lecturer's page with the lecturer's parameters (lib/ui/state.py seeds
widgets from the URL). `publish` (from ConceptPage.finish) sends the lecturer's page and state.
The room panel (start, QR, end) is lib/ui/live_room.py; predictions lib/ui/live_predict.py."""
from __future__ import annotations

import re
import secrets

import streamlit as st

from lib.classroom import codes
from lib.classroom.errors import ClassroomError, UnknownRoom
from lib.concepts.catalog import PAGES_DIR
from lib.ui.i18n import LANG_PARAM, current_lang, texts

ROOM_PARAM, KEY_PARAM, SID_PARAM = "room", "key", "s"
PARAMS = frozenset({ROOM_PARAM, KEY_PARAM, SID_PARAM})
SID_RE = re.compile(r"[A-Za-z0-9_-]{8,32}")
POLL_S = 2.0
VIEW_AGE_S = 0.25   # a student's room view may be this old: all polls share one query (room_cache)
S_ROOM, S_KEY, S_FOLLOW = "live.room", "live.key", "live.follow"
S_SEEN, S_APPLIED, S_PUBLISHED = "live.seen_version", "live.applied", "live.published"
S_NOTE, S_SID, S_NICK = "live.note", "live.session_id", "live.nickname"
S_SHOWN = "live.shown_revealed"     # question id -> its radio key, revealed on this student's page
S_OPEN = "live.open_questions"      # question id -> phase, open on this student's page
S_PHASE, PHASE_PARAM, LIVE = "live.phase", "_phase", "live"   # lesson mode: live / pre / post
S_ON_PAGE, S_BAR = "live.on_page", "live.bar_slug"   # (slug, page state) shown; the bar's slug
# URL parameters that belong to the shell or to this session, never to the page's state
NOT_PAGE_STATE = frozenset({LANG_PARAM, "view", "reveal", PHASE_PARAM}) | PARAMS


def store():
    """The process-wide class store (lib.classroom), opened on first use."""
    from lib import classroom

    return classroom.store()


def secret_ok(code: str, key: str) -> bool:
    """Whether `key` is room `code`'s presenter secret (the store checks it, in constant time)."""
    try:
        store().nicknames(code, key)
    except ClassroomError:
        return False
    return True


def room_code() -> str | None:
    return st.session_state.get(S_ROOM)


def secret() -> str | None:
    return st.session_state.get(S_KEY) if room_code() else None


def is_presenter() -> bool:
    return secret() is not None


def is_following() -> bool:
    """A student in a room who has not chosen to explore on their own."""
    return room_code() is not None and not is_presenter() and st.session_state.get(S_FOLLOW, True)


def session_id() -> str:
    """A random anonymous id (one answer per student and question), kept in the URL (`&s=`): a
    reloaded tab is the same student and changes its answer. It holds no personal data."""
    sid = st.session_state.get(S_SID)
    if sid is None:
        raw = st.query_params.get(SID_PARAM) or ""
        sid = raw if SID_RE.fullmatch(raw) else secrets.token_urlsafe(12)
        st.session_state[S_SID] = sid
    return sid


def _keep_in_url() -> None:
    """The room (and a student's id) stay in the address bar, so a reload stays in the class."""
    if st.query_params.get(ROOM_PARAM) != room_code():
        st.query_params[ROOM_PARAM] = room_code()
    if is_presenter():
        if SID_PARAM in st.query_params:
            del st.query_params[SID_PARAM]
    elif st.query_params.get(SID_PARAM) != session_id():
        st.query_params[SID_PARAM] = session_id()


def nickname() -> str | None:
    return codes.clean_nickname(st.session_state.get(S_NICK))


def room_view():
    """The room (RoomView; a student's up to VIEW_AGE_S old), or None: no room, or gone (left)."""
    code = room_code()
    if code is None:
        return None
    try:
        view = store().room(code, max_age_s=0.0 if is_presenter() else VIEW_AGE_S)
    except ClassroomError:
        view = None
    if view is None:
        leave(note=("ended", code))
    return view


def enter(code: str, key: str | None = None) -> None:
    """Make this session a member of room `code` (the lecturer when `key` is its secret)."""
    st.session_state[S_ROOM] = code
    st.session_state[S_FOLLOW] = True
    for k in (S_KEY, S_SEEN, S_APPLIED, S_PUBLISHED, S_ON_PAGE):
        st.session_state.pop(k, None)
    if key is not None:
        st.session_state[S_KEY] = key
    _keep_in_url()


def leave(note: tuple[str, str] | None = None) -> None:
    for k in (S_ROOM, S_KEY, S_FOLLOW, S_SEEN, S_APPLIED, S_PUBLISHED, S_ON_PAGE):
        st.session_state.pop(k, None)
    for p in PARAMS:
        if p in st.query_params:
            del st.query_params[p]
    if note is not None:
        st.session_state[S_NOTE] = note


def join_from_url() -> None:
    """Read `?room=` (and the lecturer's `?key=`) once per change; called by the shell before
    the sidebar. A malformed, unknown or ended code leaves a note and the app works on."""
    raw, key = st.query_params.get(ROOM_PARAM), st.query_params.get(KEY_PARAM)
    if KEY_PARAM in st.query_params:
        del st.query_params[KEY_PARAM]              # the secret never stays in the address bar
    if raw is None:
        if room_code() is not None:
            _keep_in_url()                              # a page switch dropped it: links keep it
        return
    code = codes.normalize_code(raw)
    if code is not None and code == room_code() and (key is None or key == secret()):
        _keep_in_url()
        return
    try:
        view = store().room(code) if code else None
    except ClassroomError:
        view = None
    if view is None:
        leave(note=("bad_code", raw[:12]))
        return
    if key is not None and not secret_ok(code, key):
        enter(code)
        st.session_state[S_NOTE] = ("bad_key", code)
        return
    enter(code, key)
    if key is not None:
        from lib.ui import present

        present.set_presenter_view(True)            # the presenter link opens the presenter view


def show_note() -> None:
    """A note left by joining or by a room that ended (both languages)."""
    note = st.session_state.pop(S_NOTE, None)
    if note:
        kind, code = note
        st.warning(texts("live_class")(kind, code=code), icon="🎓")


# ---- following the lecturer --------------------------------------------------------------------
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
    for k in _page_widget_keys(slug) + [f"lessons.published.{n}" for n in ("lesson", "step")] + [S_OPEN, S_ON_PAGE]:
        st.session_state.pop(k, None)
    query = {k: v for k, v in params.items() if k not in NOT_PAGE_STATE}
    query[ROOM_PARAM] = room_code()
    query[SID_PARAM] = session_id()
    if current_lang() != "en":
        query[LANG_PARAM] = current_lang()
    st.switch_page(str(PAGES_DIR / f"{slug}.py"), query_params=query)


def _explore(on: bool) -> None:
    st.session_state[S_FOLLOW] = not on
    st.session_state.pop(S_APPLIED, None)           # back to the class: go to its page again
    st.session_state.pop(S_SEEN, None)


def follow_bar() -> None:
    """The student's class bar atop every page (phones hide the sidebar); `_poll_room` polls."""
    if room_code() is None or is_presenter():
        return
    from lib.ui.glossary import page_title
    t, view = texts("live_class"), room_view()
    if view is None:
        st.rerun(scope="app")                       # the room is gone: the page without it
    follow = is_following()
    where = t("now_in_class", page=page_title(view.slug)) if view.slug else t("waiting_page")
    st.session_state["live.room_page"], st.session_state[S_BAR] = where, view.slug
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
    view = room_view()
    if view is None:
        st.rerun(scope="app")                       # the room is gone: the page without it
    if is_following() and view.version != st.session_state.get(S_SEEN):
        st.session_state[S_SEEN] = view.version
        if _reopened(view) or _closed(view):
            st.rerun(scope="app")
        target = (view.slug, tuple(sorted(view.params.items())))
        if view.slug and target != st.session_state.get(S_APPLIED):
            st.session_state[S_APPLIED] = target
            if target != st.session_state.get(S_ON_PAGE):     # not what the page shows already
                go_to(view.slug, dict(view.params))
    if view.slug != st.session_state.get(S_BAR):
        st.rerun(scope="app")                       # the bar names another page: redraw it


def _closed(view) -> bool:
    """Whether a question open on this page was revealed (or closed) since (redrawn revealed)."""
    open_ = st.session_state.get(S_OPEN, {})
    done = [q for q, phase in open_.items() if view.is_revealed(q, phase)]
    for q in done:
        open_.pop(q)
    return bool(done)


def _reopened(view) -> bool:
    """Whether a question shown revealed was reset: its answer is forgotten, redrawn open."""
    shown = st.session_state.get(S_SHOWN, {})
    again = [q for q in shown if q not in view.revealed]
    for q in again:
        key = shown.pop(q)
        for k in (key, key + ".sent", key + ".err"):
            st.session_state.pop(k, None)
    return bool(again)


# ---- the lecturer publishes ---------------------------------------------------------------------
def page_state(slug: str, claimed: set[str]) -> dict[str, str]:
    """The page's state as URL parameters: its URL's, plus text boxes left at their default
    (a default prompt differs between languages; students must see the lecturer's)."""
    out = {}
    for name in sorted(set(claimed) - NOT_PAGE_STATE):
        value = st.query_params.get(name)
        if value is None:
            value = st.session_state.get(f"{slug}.{name}")
        if isinstance(value, str):
            out[name] = value
    return out


def publish(slug: str, claimed: set[str]) -> None:
    """The lecturer's page/controls to the room when changed; a student's, to S_ON_PAGE."""
    if not is_presenter():
        if room_code() is not None:
            st.session_state[S_ON_PAGE] = (slug, tuple(sorted(page_state(slug, claimed).items())))
        return
    params = page_state(slug, claimed)
    if st.session_state.get(S_PHASE, LIVE) != LIVE:
        params[PHASE_PARAM] = st.session_state[S_PHASE]
    target = (slug, tuple(sorted(params.items())))
    if target == st.session_state.get(S_PUBLISHED):
        return
    try:
        store().set_page(room_code(), secret(), slug, params)
    except UnknownRoom:
        leave(note=("ended", room_code()))
        return
    st.session_state[S_PUBLISHED] = target
