"""A student (or the lecturer) of a live class without a browser: one session over Streamlit's
websocket protocol (/_stcore/stream), kept open, as lib.serving.page_visit does for one visit.

`LiveSession.run(states, fragment_id)` sends one rerun_script BackMsg (the page, its query
string, the widget states, and, for a fragment's rerun, that fragment's id, as the browser does
when a widget inside a fragment changes) and reads ForwardMsgs until script_finished. A `Run`
keeps what the deltas showed: the answer radio (its widget id, ending in the key lib/ui's
live_predict gives it, `live.answer.<phase>.<question id>`, its options and the fragment it sits
in), the fragment ids of markdown texts, the success/error alerts, exception elements, and the
fragments the page asks the browser to rerun every so often (auto_rerun: how a `run_every`
fragment polls; a browser-less client has to send those reruns itself, `auto=True`).
Used by bench/live_class.py and tests/load/test_live_class_load.py.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

FINISHED = ForwardMsg.ScriptFinishedStatus
ENDS = (FINISHED.FINISHED_SUCCESSFULLY, FINISHED.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
        FINISHED.FINISHED_WITH_COMPILE_ERROR)
ALERT_ERROR, ALERT_SUCCESS = 1, 4
ANSWER_KEY = "live.answer."


@dataclass
class Run:
    seconds: float = 0.0
    finished: bool = False
    radio_id: str | None = None
    radio_options: list[str] = field(default_factory=list)
    radio_fragment: str = ""
    texts: list[tuple[str, str]] = field(default_factory=list)    # (fragment id, markdown body)
    successes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    polls: dict[str, float] = field(default_factory=dict)          # fragment id -> run_every s
    stopped: list[str] = field(default_factory=list)                # polls the page stopped
    drawn: set[str] = field(default_factory=set)                    # fragments with deltas
    full: bool = False               # the page ran (its polls replace the earlier ones)
    failure: str | None = None
    sent: bool = False                                              # the BackMsg left
    ended_at: float = 0.0            # perf_counter when it finished: a browser's run_every timer starts here


class LiveSession:
    """One open websocket session on `page` with `query` (e.g. "room=ABC234")."""

    runs = 0                     # runs sent by every session of this process (the benchmark's rate)

    def __init__(self, base: str, page: str, query: str):
        self.url = base.replace("http://", "ws://").rstrip("/") + "/_stcore/stream"
        self.page, self.query = page, query
        self.ws = None
        self.page_hash = ""          # the page the server last ran (a browser sends it back)

    async def open(self) -> None:
        import websockets

        self.ws = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None,
                                           open_timeout=60, ping_interval=None)

    async def close(self) -> None:
        if self.ws is not None:
            try:
                await self.ws.close()
            except Exception:          # noqa: BLE001 - a dead server closes it for us
                pass

    async def run(self, radio: tuple[str, str] | None = None, fragment_id: str = "",
                  timeout_s: float = 300.0, auto: bool = False) -> Run:
        """One script (or fragment) run; `radio`=(widget id, chosen option) sets that radio."""
        back = BackMsg()
        back.rerun_script.query_string = self.query
        back.rerun_script.page_name = self.page
        back.rerun_script.page_script_hash = self.page_hash
        back.rerun_script.widget_states.SetInParent()
        if radio is not None:
            w = back.rerun_script.widget_states.widgets.add()
            w.id, w.string_value = radio
        if fragment_id:
            back.rerun_script.fragment_id = fragment_id
            back.rerun_script.is_auto_rerun = auto
        r, starts = Run(), 0
        LiveSession.runs += 1
        t0 = time.perf_counter()
        try:
            await self.ws.send(back.SerializeToString())
            r.sent = True
            async with asyncio.timeout(timeout_s):
                while True:
                    data = await self.ws.recv()
                    if isinstance(data, str):
                        continue
                    msg = ForwardMsg()
                    msg.ParseFromString(data)
                    kind = msg.WhichOneof("type")
                    if kind == "new_session":         # a run starts (a fragment's, or the page's)
                        starts += 1
                        self.page_hash = msg.new_session.page_script_hash
                        if not fragment_id or starts > 1:   # the page's: it redraws everything
                            r.radio_id, r.radio_fragment, r.polls, r.drawn = None, "", {}, set()
                    elif kind == "navigation":       # the page the run resolved: the browser's from now on
                        self.page_hash = msg.navigation.page_script_hash
                    elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                        r.drawn.add(msg.delta.fragment_id)
                        self._read(r, msg.delta.new_element, msg.delta.fragment_id)
                    elif kind == "auto_rerun":
                        r.polls[msg.auto_rerun.fragment_id] = msg.auto_rerun.interval
                    elif kind == "stop_auto_rerun":
                        r.polls.pop(msg.stop_auto_rerun.fragment_id, None)
                        r.stopped.append(msg.stop_auto_rerun.fragment_id)
                    elif kind == "script_finished" and msg.script_finished in ENDS:
                        r.finished = msg.script_finished != FINISHED.FINISHED_WITH_COMPILE_ERROR
                        break
            r.full = not fragment_id or "" in r.drawn
            if r.full:               # only fragments the final page run drew: others are gone
                r.polls = {f: every for f, every in r.polls.items() if f in r.drawn}
        except TimeoutError:
            r.failure = f"no script_finished within {timeout_s:.0f} s"
        except Exception as e:           # noqa: BLE001 - a dropped connection is a failed run
            r.failure = f"{type(e).__name__}: {e}"[:300]
        r.ended_at = time.perf_counter()
        r.seconds = r.ended_at - t0
        return r

    @staticmethod
    def _read(r: Run, el, fragment_id: str) -> None:            # noqa: ANN001 (proto Element)
        what = el.WhichOneof("type")
        if what == "radio" and ANSWER_KEY in el.radio.id:
            r.radio_id, r.radio_options = el.radio.id, list(el.radio.options)
            r.radio_fragment = fragment_id
        elif what == "markdown":
            r.texts.append((fragment_id, el.markdown.body))
        elif what == "alert" and el.alert.format == ALERT_SUCCESS:
            r.successes.append(el.alert.body)
        elif what == "alert" and el.alert.format in (ALERT_ERROR, 2):
            r.warnings.append(el.alert.body)
        elif what == "exception":
            r.exceptions.append(f"{el.exception.type}: {el.exception.message}"[:300])
