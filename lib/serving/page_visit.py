"""The server visiting its own pages: one session over Streamlit's own websocket protocol.

What a browser tab does, minus the drawing: open /_stcore/stream, send one `rerun_script`
BackMsg (page name + query string), read ForwardMsgs until the script run finishes
(`script_finished` = FINISHED_SUCCESSFULLY; the server's first run of a deep link may end
early for a rerun first). Counts exception elements (a crash shown in the page) and error
alerts. Used by the background pre-computation (lib.serving.prewarm), `make run`'s start
(lib.serving.serve), "Prepare this lesson" (lib.ui.lesson_prep), and under the benchmark's
load client (bench/visitor.py), which opens many at once and measures them.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

PREWARM_HEADER = "X-LLM-Lab-Prewarm"      # marks the server's own background visitor
DONE = ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY
COMPILE_ERROR = ForwardMsg.ScriptFinishedStatus.FINISHED_WITH_COMPILE_ERROR


@dataclass
class Visit:
    page: str
    query: str
    seconds: float = 0.0
    finished: bool = False
    exceptions: list[str] = field(default_factory=list)   # "Type: message" of each exception element
    errors: list[str] = field(default_factory=list)       # st.error alerts
    page_not_found: bool = False
    elements: int = 0
    texts: list[str] = field(default_factory=list)        # markdown (not captions) and alert bodies
    htmls: list[str] = field(default_factory=list)        # st.html bodies (token views)
    failure: str | None = None                            # connection trouble, timeout
    first_chart_s: float | None = None                    # when the first Plotly chart arrived
    charts: int = 0                                       # Plotly charts sent (redrawn ones each time)
    progress_left: int = 0                                # st.progress bars still shown at the end

    @property
    def crashed(self) -> bool:
        return bool(self.exceptions) or self.page_not_found or self.failure is not None or not self.finished


def _replaced(shown: dict[tuple, str], path: tuple) -> None:
    """A delta at `path` replaces what was there, its children too (an `st.empty` emptied after
    a progress bar and a figure were drawn in a container inside it)."""
    for p in [p for p in shown if len(p) > len(path) and p[:len(path)] == path]:
        del shown[p]


async def visit_async(base: str, page: str, query: str = "", timeout_s: float = 600.0,
                      headers: dict | None = None, keep_texts: bool = False,
                      until_complete: bool = False) -> Visit:
    """Open `page` (url path, "" for the default page) with `query` ("lang=id&T=0.7") on the
    server at `base` (http://127.0.0.1:PORT) and wait for its script run to finish; with
    `until_complete`, also for the fragment runs after it, until a run finishes with no
    `st.progress` bar left on the page (the completion contract, issue 29)."""
    import websockets

    v = Visit(page, query)
    url = base.replace("http://", "ws://").replace("https://", "wss://").rstrip("/") + "/_stcore/stream"
    back = BackMsg()
    back.rerun_script.query_string = query
    back.rerun_script.page_name = page
    back.rerun_script.widget_states.SetInParent()
    t0 = time.perf_counter()
    shown: dict[tuple, str] = {}                          # delta path -> the element there now
    try:
        async with websockets.connect(url, subprotocols=["streamlit"], max_size=None, open_timeout=60,
                                      additional_headers=headers or {}, ping_interval=None) as ws:
            await ws.send(back.SerializeToString())
            async with asyncio.timeout(timeout_s):
                while True:
                    data = await ws.recv()
                    if isinstance(data, str):
                        continue
                    msg = ForwardMsg()
                    msg.ParseFromString(data)
                    kind = msg.WhichOneof("type")
                    if kind == "delta" and msg.delta.WhichOneof("type") in ("new_element", "add_block"):
                        _replaced(shown, tuple(msg.metadata.delta_path))
                    if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                        el = msg.delta.new_element
                        v.elements += 1
                        what = el.WhichOneof("type")
                        shown[tuple(msg.metadata.delta_path)] = what
                        v.charts += what == "plotly_chart"
                        if what == "plotly_chart" and v.first_chart_s is None:
                            v.first_chart_s = time.perf_counter() - t0
                        if what == "exception":
                            where = " <- ".join(line.strip() for line in list(el.exception.stack_trace)[-6:][::-1])
                            v.exceptions.append(f"{el.exception.type}: {el.exception.message}"[:500] + f" at {where[:1500]}")
                        elif what == "alert" and el.alert.format == 1:      # Alert.ERROR
                            v.errors.append(el.alert.body[:300])
                        elif keep_texts and what == "markdown" and el.markdown.element_type != 2:   # not captions
                            v.texts.append(el.markdown.body)
                        elif keep_texts and what == "alert":
                            v.texts.append(el.alert.body)
                        elif keep_texts and what == "html":
                            v.htmls.append(el.html.body)
                    elif kind == "page_not_found":
                        v.page_not_found = True
                    elif kind == "script_finished":
                        if msg.script_finished in (DONE, COMPILE_ERROR):
                            v.finished = msg.script_finished == DONE
                            v.progress_left = sum(1 for what in shown.values() if what == "progress")
                            if not (until_complete and v.finished and v.progress_left):
                                break
    except TimeoutError:
        v.failure = f"no script_finished within {timeout_s:.0f} s"
    except Exception as e:  # noqa: BLE001 - a refused or dropped connection is a failed visit
        v.failure = f"{type(e).__name__}: {e}"[:300]
    v.seconds = time.perf_counter() - t0
    return v


def visit(base: str, page: str, query: str = "", timeout_s: float = 600.0, headers: dict | None = None,
          keep_texts: bool = False, until_complete: bool = False) -> Visit:
    return asyncio.run(visit_async(base, page, query, timeout_s, headers, keep_texts, until_complete))
