"""`python -m lib.serving.serve [streamlit options]`: `streamlit run app.py` that starts its work at once.

Streamlit runs no script until a browser opens a session, so a plain `streamlit run app.py`
sits idle after it starts: the model is loaded and every page's default state computed
(lib.serving.prewarm) only when the first student arrives, who then waits for all of it. This
starts the same server and, as soon as it answers /_stcore/health, opens one session of the
background visitor (lib.serving.page_visit, marked by PREWARM_HEADER) on the home page: that run
loads the model and starts the background pre-computation, at the lowest priority, while
the server waits for its class.

    python -m lib.serving.serve --server.port 8501          (what `make run` and the Dockerfile run)

Streamlit Community Cloud starts `streamlit run app.py` itself: there the first visitor of a
woken app starts the same work (docs/DEPLOY.md).
"""
from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app.py"


def option(argv: list[str], name: str, default: str) -> str:
    """The value of a streamlit command-line option (`--name value` or `--name=value`)."""
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return default


def wake(base: str, timeout_s: float = 300.0) -> bool:
    """Wait until the server at `base` answers its health check, then run the home page once
    as the background visitor. False if the server never answered."""
    from lib.serving.page_visit import PREWARM_HEADER, visit

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(base + "/_stcore/health", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        return False
    v = visit(base, "", "", timeout_s=1800, headers={PREWARM_HEADER: "1"})
    print(f"[serve] the server has started its work ({v.seconds:.1f} s for the first run"
          f"{', which failed: ' + str(v.failure or v.exceptions[:1]) if v.crashed else ''})", flush=True)
    return not v.crashed


def main(argv: list[str]) -> int:
    port = option(argv, "--server.port", "8501")
    path = option(argv, "--server.baseUrlPath", "").strip("/")
    base = f"http://127.0.0.1:{port}" + (f"/{path}" if path else "")
    # streamlit in a session of its own, so that it is stopped once, by this process: Ctrl-C
    # (SIGINT) and `docker stop` (SIGTERM) are passed on to it (a second signal during its
    # shutdown aborted it)
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(APP), *argv], start_new_session=True)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda number, frame: proc.send_signal(number) if proc.poll() is None else None)
    # The wake-up visit runs in a short-lived process of its own: its imports (the websocket
    # client, Streamlit's messages: ~50 MB) leave with it instead of staying in this process,
    # which only waits, for as long as the server runs.
    waker = subprocess.Popen([sys.executable, "-m", "lib.serving.serve", "--wake", base], cwd=APP.parent)
    threading.Thread(target=waker.wait, name="wake", daemon=True).start()     # reaped when it ends
    code = proc.wait()
    if waker.poll() is None:
        waker.terminate()
    return code


if __name__ == "__main__":
    if sys.argv[1:2] == ["--wake"]:
        sys.exit(0 if wake(sys.argv[2]) else 1)
    sys.exit(main(sys.argv[1:]))
