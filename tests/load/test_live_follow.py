"""A student following the lecturer over Streamlit's websocket protocol (bench/live_student.py),
on a fresh server with its own SQLite class database.

The race it pins down (found with eight browser students on a busy server, 2026-12-06: one to
three of them, on two moves out of three, saw the class bar above an empty page): the
student's poll switches to the lecturer's page (`st.switch_page`), and the browser's 2 s timer,
which fired before the browser learnt of the switch, asks for the poll again with the old
page's hash. Streamlit runs that poll after the new page, for the old page, and the browser
then shows nothing but the poll's own output. Here the stale request is sent on purpose."""
from __future__ import annotations

import asyncio

import pytest

from bench.classroom import free_port, start_server, stop_server
from bench.live_student import LiveSession
from lib.classroom import ClassStore
from lib.ui.live_follow import POLL_S

pytestmark = [pytest.mark.load, pytest.mark.real_model]


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    """(server url, store, the room's code and secret) on a fresh server."""
    from lib.model import bundled_model

    bundled_model.prepare()
    url = f"sqlite:///{tmp_path_factory.mktemp('class')}/class.db"
    proc, base = start_server(free_port(), env={"LLM_LAB_CLASS_DB": url, "LLM_LAB_PREWARM": "0"})
    store = ClassStore(url)
    k = store.create_room("en")
    yield base, store, k.code, k.secret
    store.close()
    stop_server(proc)


async def _follow_then_stale_poll(base: str, store: ClassStore, code: str, secret: str):
    s = LiveSession(base, "", f"room={code}&s=followtest0001")
    await s.open()
    try:
        home = await s.run(timeout_s=300)
        home_hash = s.page_hash
        poll = [f for f, every in home.polls.items() if abs(every - POLL_S) < 1e-6]
        store.set_page(code, secret, "temperature", {})
        moved = await s.run(fragment_id=poll[0], auto=True, timeout_s=300)
        page_hash = s.page_hash
        s.page_hash = home_hash            # the timer's request, sent before the browser knew
        stale = await s.run(fragment_id=poll[0], auto=True, timeout_s=300)
        return home, poll, home_hash, moved, page_hash, stale, s.page_hash
    finally:
        await s.close()


def test_a_poll_sent_for_the_page_before_a_switch_draws_the_new_page_again(room):
    home, poll, home_hash, moved, page_hash, stale, last_hash = asyncio.run(_follow_then_stale_poll(*room))
    assert home.finished and not home.exceptions and len(poll) == 1, home
    # the poll took the student to the lecturer's page, drawn whole
    assert moved.finished and moved.full and page_hash != home_hash, moved
    # the stale poll: the lecturer's page is drawn whole again, not a lone poll for the old page
    assert stale.finished and not stale.exceptions, stale
    assert last_hash == page_hash, "the stale poll left the student on the page before the switch"
    assert stale.full, "the stale poll drew only itself: the browser shows an empty page"
