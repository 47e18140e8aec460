"""The live class in the app (issue 30): who this session is in a room, joining by link, and
following the lecturer.

Session state, per browser tab: `live.room` the room code this session is in (a student or the
lecturer); `live.key` the presenter secret, lecturer only (`?key=` is read once and removed, so
a projected address bar does not show it); `live.follow` False after "Explore on my own".

A student follows the lecturer with lib/ui/live_follow.py. `publish` (from ConceptPage.finish)
sends the lecturer's page and state. The room panel (start, QR, end) is lib/ui/live_room.py;
predictions lib/ui/live_predict.py."""
from __future__ import annotations

import re
import secrets

import streamlit as st

from lib.classroom import codes
from lib.classroom.errors import ClassroomError, UnknownRoom
from lib.ui.i18n import LANG_PARAM, texts

ROOM_PARAM, KEY_PARAM, SID_PARAM = "room", "key", "s"
PARAMS = frozenset({ROOM_PARAM, KEY_PARAM, SID_PARAM})
SID_RE = re.compile(r"[A-Za-z0-9_-]{8,32}")
VIEW_AGE_S = 0.25   # a student's room view may be this old: all polls share one query (room_cache)
S_ROOM, S_KEY, S_FOLLOW = "live.room", "live.key", "live.follow"
S_SEEN, S_APPLIED, S_PUBLISHED = "live.seen_version", "live.applied", "live.published"
S_NOTE, S_SID, S_NICK = "live.note", "live.session_id", "live.nickname"
S_SHOWN = "live.shown_revealed"     # question id -> its radio key, revealed on this student's page
S_OPEN = "live.open_questions"      # question id -> phase, open on this student's page
S_PHASE, PHASE_PARAM, LIVE = "live.phase", "_phase", "live"   # lesson mode: live / pre / post
S_ON_PAGE, S_BAR = "live.on_page", "live.bar_slug"   # (slug, page state) shown; the bar's slug
S_PAGE = "live.page"        # the url path of the page this session's last whole run drew
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
