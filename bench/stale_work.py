"""Does stale work stop? A student changes a slow control, then changes it again before the
result arrives (issue 29 item 4): the first computation should stop within about half a second.

One session over Streamlit's websocket protocol opens the page, types a new prompt into its
text area (a rerun carrying that widget's new state, as the browser sends it: a rerun with a new
query string changes nothing, the page reads the URL only when a session starts), waits
`delay_s`, then goes back to the default prompt (a rerun without widget states), and measures
from that second send until a run started after it is complete. `stale_stop_s` = that time minus the second change's time alone: how long
the stale computation held the session (and the CPU) after nobody wanted it. Without
cooperative cancellation it would be the slow change's remaining time.
"""
from __future__ import annotations

import asyncio
import time

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

DONE = ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY


def _rerun(page: str, query: str, widgets: dict[str, str] | None = None) -> bytes:
    """A rerun of `page`; `widgets`: text widgets' ids -> the string a student typed there."""
    back = BackMsg()
    back.rerun_script.query_string = query
    back.rerun_script.page_name = page
    back.rerun_script.widget_states.SetInParent()
    for wid, value in (widgets or {}).items():
        state = back.rerun_script.widget_states.widgets.add()
        state.id, state.string_value = wid, value
    return back.SerializeToString()


async def _until_done(ws, timeout_s: float, after_new_session: bool = False) -> str | None:
    """Read until a script run finishes successfully (with `after_new_session`: a run that
    started after this call); returns the id of the first text area drawn meanwhile (the
    page's prompt), if any."""
    prompt_id, started = None, not after_new_session
    async with asyncio.timeout(timeout_s):
        while True:
            data = await ws.recv()
            if isinstance(data, str):
                continue
            msg = ForwardMsg()
            msg.ParseFromString(data)
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                started = True
            elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                el = msg.delta.new_element
                if el.WhichOneof("type") == "text_area" and prompt_id is None:
                    prompt_id = el.text_area.id
            elif kind == "script_finished" and msg.script_finished == DONE and started:
                return prompt_id


async def _drain(ws, seconds: float) -> None:
    """Read (and drop) everything that arrives for `seconds`."""
    end = time.perf_counter() + seconds
    while (left := end - time.perf_counter()) > 0:
        try:
            await asyncio.wait_for(ws.recv(), timeout=left)
        except TimeoutError:
            return


async def _change_twice(base: str, page: str, slow: str | None, delay_s: float, timeout_s: float) -> float:
    import websockets

    url = base.replace("http://", "ws://").rstrip("/") + "/_stcore/stream"
    async with websockets.connect(url, subprotocols=["streamlit"], max_size=None, ping_interval=None) as ws:
        await ws.send(_rerun(page, ""))
        prompt_id = await _until_done(ws, timeout_s)     # the page's default, as a student arrives
        if prompt_id is None:
            raise ValueError(f"{page} draws no text area to type a prompt into")
        if slow is not None:                              # the student types a new prompt ...
            await ws.send(_rerun(page, "", {prompt_id: slow}))
            await _drain(ws, delay_s)
        t0 = time.perf_counter()
        await ws.send(_rerun(page, ""))                   # ... then goes back to the default prompt
        await _until_done(ws, timeout_s, after_new_session=True)
        return time.perf_counter() - t0


def change_twice(base: str, page: str, slow: str | None, delay_s: float = 1.0, timeout_s: float = 300.0) -> float:
    """Seconds from going back to the default prompt until that run finished, `delay_s` after
    typing `slow` into the page's prompt (None: without it, the default alone)."""
    return asyncio.run(_change_twice(base, page, slow, delay_s, timeout_s))
