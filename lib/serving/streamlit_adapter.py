"""The one module of lib/serving that knows Streamlit: what the serving layer needs from a
Streamlit server, in plain values and callables.

- `session_still_wants()`: a probe for lib.core.cancellation, True while the current script
  run's result is still wanted: False once Streamlit has a stop (the tab closed) or a rerun that
  replaces this run (a control moved again) pending for this session. A fragment's own rerun
  (the live class's poll every 2 s) does not replace a whole-page run, so it cancels nothing.
- `script_run(background)`: wraps one script run: installs that probe, and when a computation
  stopped because of it, hands control back to Streamlit, which then starts the new run.
- `is_background_session()`: is this session the server's own background visitor
  (page_visit.PREWARM_HEADER)?
- `server_base_url()`, `server_port()`: where this server listens (for visiting itself).
Everything else in lib/serving is plain Python that the benchmark and tests run headless.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from lib.core import cancellation
from lib.serving.page_visit import PREWARM_HEADER


def session_still_wants() -> cancellation.Probe | None:
    """The probe of the current script run (None outside a Streamlit script run: AppTest
    without a runner, plain Python)."""
    from streamlit.runtime.scriptrunner_utils import script_requests as sr
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    requests = getattr(ctx, "script_requests", None)
    if requests is None:
        return None
    preempts = getattr(sr, "_fragment_run_should_not_preempt_script", None)

    def wanted() -> bool:
        state = getattr(requests, "_state", None)
        if state == sr.ScriptRequestType.STOP:
            return False
        if state == sr.ScriptRequestType.RERUN:
            data = requests._rerun_data
            if preempts is not None and preempts(data.fragment_id_queue, data.is_fragment_scoped_rerun):
                return True                      # a fragment's rerun waits for this run
            return False
        return True

    return wanted


@contextmanager
def script_run() -> Iterator[None]:
    """One script run whose computations stop when the session no longer wants them."""
    import streamlit as st

    try:
        with cancellation.wanted_while(session_still_wants()):
            yield
    except cancellation.Cancelled:
        st.empty()       # Streamlit raises its pending stop / rerun here, at its yield point
        st.rerun()       # (a race left nothing pending: run the page again)


def is_background_session() -> bool:
    try:
        import streamlit as st

        return st.context.headers.get(PREWARM_HEADER) == "1"
    except Exception:  # noqa: BLE001 - no session context (AppTest, bare scripts): a visitor
        return False


def server_port() -> int:
    from streamlit import config

    return int(config.get_option("server.port"))


def server_base_url() -> str:
    """http://127.0.0.1:PORT[/base path] of this Streamlit server."""
    from streamlit import config

    path = (config.get_option("server.baseUrlPath") or "").strip("/")
    return f"http://127.0.0.1:{server_port()}" + (f"/{path}" if path else "")
