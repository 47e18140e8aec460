"""The benchmark's load client: many sessions at once over Streamlit's websocket protocol.

One session is `lib.serving.page_visit.visit_async` (what a browser tab does, minus the
drawing); `class_of` opens a whole class of them at once. Used by the classroom benchmark
(bench/classroom.py) and the load tests (tests/load/).
"""
from __future__ import annotations

import asyncio

from lib.serving.page_visit import Visit, visit, visit_async  # noqa: F401  (re-export)


def class_of(base: str, visits: list[tuple[str, str]], timeout_s: float = 900.0,
             keep_texts: bool = False, until_complete: bool = False) -> list[Visit]:
    """Open every (page, query) at once, one session each; their Visits in the same order
    (`until_complete`: each waits until no st.progress bar is left, page_visit.visit_async)."""
    async def run():
        return await asyncio.gather(*(visit_async(base, p, q, timeout_s, keep_texts=keep_texts,
                                                  until_complete=until_complete)
                                      for p, q in visits))

    return list(asyncio.run(run()))
