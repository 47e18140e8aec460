"""Headless Chromium as the tests and the benchmark drive it: Debian's chromium with the
project's flags, and when a Streamlit page counts as done (script finished, charts drawn)."""
from __future__ import annotations

import time

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def settle(page, timeout_s: float = 300) -> None:
    """Wait until Streamlit's script has finished (state notRunning for 1.5 s in a row)."""
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout_s * 1000)
    end, quiet = time.time() + timeout_s, None
    while time.time() < end:
        state = page.evaluate("() => document.querySelector(\"[data-testid='stApp']\")"
                              "?.getAttribute('data-test-script-state')")
        if state == "notRunning":
            quiet = quiet or time.time()
            if time.time() - quiet > 1.5:
                return
        else:
            quiet = None
        time.sleep(0.25)
    raise TimeoutError("page did not finish running")


CHARTS_DRAWN = """(atLeast) => {
    const charts = [...document.querySelectorAll("[data-testid='stPlotlyChart']")];
    return charts.length >= atLeast && charts.every(el => el.querySelector('.js-plotly-plot'));
}"""


def wait_for_charts(page, at_least: int, timeout_s: float = 90) -> None:
    """Plotly's component loads lazily and draws after the script has finished: wait until at
    least `at_least` chart elements exist and every one holds a drawn plot. A timeout is not an
    error here; the caller's assertions report what is missing."""
    try:
        page.wait_for_function(CHARTS_DRAWN, arg=at_least, timeout=timeout_s * 1000)
    except Exception:  # noqa: BLE001 - playwright's TimeoutError; the caller asserts what is missing
        pass
