"""Does stale work stop? A student changes a slow control, then changes it again before the
result arrives (issue 29 item 4): the first computation should stop within about half a second.

One session over Streamlit's websocket protocol sends a rerun with the slow change, waits
`delay_s`, then sends a rerun with the second change, and measures from that second send until
its run is complete. `stale_stop_s` = that time minus the second change's time alone: how long
the stale computation held the session (and the CPU) after nobody wanted it. Without
cooperative cancellation it would be the slow change's remaining time.
"""
from __future__ import annotations

import asyncio
import time

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

DONE = ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY


def _rerun(page: str, query: str) -> bytes:
    back = BackMsg()
    back.rerun_script.query_string = query
    back.rerun_script.page_name = page
    back.rerun_script.widget_states.SetInParent()
    return back.SerializeToString()


async def _until_done(ws, timeout_s: float) -> None:
    async with asyncio.timeout(timeout_s):
        while True:
            data = await ws.recv()
            if isinstance(data, str):
                continue
            msg = ForwardMsg()
            msg.ParseFromString(data)
            if msg.WhichOneof("type") == "script_finished" and msg.script_finished == DONE:
                return


async def _change_twice(base: str, page: str, slow: str, then: str, delay_s: float, timeout_s: float) -> float:
    import websockets

    url = base.replace("http://", "ws://").rstrip("/") + "/_stcore/stream"
    async with websockets.connect(url, subprotocols=["streamlit"], max_size=None, ping_interval=None) as ws:
        await ws.send(_rerun(page, ""))
        await _until_done(ws, timeout_s)                  # the page's default, as a student arrives
        await ws.send(_rerun(page, slow))
        await asyncio.sleep(delay_s)
        t0 = time.perf_counter()
        await ws.send(_rerun(page, then))
        await _until_done(ws, timeout_s)
        return time.perf_counter() - t0


def change_twice(base: str, page: str, slow: str, then: str, delay_s: float = 1.0,
                 timeout_s: float = 300.0) -> float:
    """Seconds from the second change until its run finished (see the module docstring)."""
    return asyncio.run(_change_twice(base, page, slow, then, delay_s, timeout_s))
