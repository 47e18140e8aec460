"""What every browser test shares (issue 31: a cold page is rendered once, not once per module):
one fresh `streamlit run app.py` for the whole browser run, stopped as soon as the last browser
test is done (so it neither computes nor holds memory beside the tests that follow), and a
headless Chromium per module (Playwright's sync API keeps an event loop open while it runs, and
the load tests' `asyncio.run` cannot start beside it).

Screenshots (JPEG) go to artifacts/screenshots/ (CI keeps them). A module that needs a server of its
own (the live class, with its own database) defines its own `server` fixture, which overrides
this one for that module only."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.browser import CHROMIUM, FLAGS, settle, wait_for_charts
from bench.classroom import free_port, start_server, stop_server
from tests.conftest import ROOT

SHOTS = ROOT / "artifacts" / "screenshots"
SETTLE_S = 900          # generous: a cold page runs the model, and CI machines may be busy
# Playwright's own limit for one action (a screenshot waits for the page's fonts, a click for its
# element): its default 30 s ran out for a screenshot on a CI machine that ran everything 3.5x as
# slowly as this one (the same visit: 132 s there, 46 s here).
ACTION_MS = 180_000
_RUNNING = []           # the shared server's process while it runs


@pytest.fixture(scope="session")
def server():
    """A freshly started `streamlit run app.py` (the model is prepared but not yet loaded), on
    $LAB_TEST_PORT when set (a shared machine's own port range), else on a free port. Shared by
    every browser module, so each page's cold results are computed once per run."""
    from lib.model import bundled_model

    bundled_model.prepare()
    # No background pre-computation: every page's default state is on disk already (the app
    # tests computed it into the same results folder), and recomputing it beside the visits only
    # slows them (46 states in ~115 s of one core); tests/load/test_serve.py tests it.
    proc, url = start_server(int(os.environ.get("LAB_TEST_PORT") or free_port()), {"LLM_LAB_PREWARM": "0"})
    _RUNNING.append(proc)
    yield url
    stop_server(proc)


def pytest_runtest_teardown(item, nextitem):
    """After the last browser test (pytest calls this conftest's hook for browser tests only),
    stop the shared server instead of at the end of the whole run."""
    here = Path(__file__).parent
    if _RUNNING and (nextitem is None or here not in Path(nextitem.path).parents):
        stop_server(_RUNNING.pop())


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium with the project's flags (bench.browser.FLAGS), for one module."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        _TABS.pop(b, None)
        b.close()


_TABS: dict = {}     # browser -> the one tab its visits load their pages in


def shot_path(name: str) -> str:
    """artifacts/screenshots/<name>.jpg: JPEG, a third of a PNG's encoding time on a tall page."""
    return str(SHOTS / f"{name}.jpg")


def visit(browser, url: str, shot: str, charts: int = 0, width: int = 1400, height: int = 4000):
    """Load `url` in the browser's tab at `width` x `height`, wait until the script is done and
    at least `charts` charts are drawn, save a full-page screenshot as
    artifacts/screenshots/<shot>.jpg; returns the page (callers leave it open: the next visit
    loads its own URL in it, and the fixture closes the browser). Raises TimeoutError if the
    script never ends.
    Every visit is a new document, hence a new Streamlit session, as a visitor's new tab is; one
    tab for them all means one renderer process, whose compiled Streamlit and Plotly scripts the
    next page reuses: Chromium's work for 8 pages 55 -> 36 CPU-seconds (a new tab for each)."""
    page = _TABS.get(browser)
    if page is None or page.is_closed():
        context = browser.new_context()
        context.set_default_timeout(ACTION_MS)
        page = _TABS[browser] = context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    page.goto(url, wait_until="domcontentloaded")
    settle(page, SETTLE_S)
    wait_for_charts(page, charts, 180)
    page.screenshot(path=shot_path(shot), full_page=True, type="jpeg", quality=80)
    return page
