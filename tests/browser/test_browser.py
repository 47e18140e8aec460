"""The whole app in headless Chromium: a fresh server, every page in English and Indonesian.

Screenshots are kept in artifacts/screenshots/ (CI keeps them)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from lib.concepts.catalog import CONCEPTS
from lib.ui.i18n import load_texts
from tests.conftest import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.real_model]
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SHOTS = ROOT / "artifacts" / "screenshots"
PAGES = [c for c in CONCEPTS if c.exists]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """A freshly started `streamlit run app.py` (the model is prepared but not yet loaded)."""
    from lib.model import bundled_model

    bundled_model.prepare()
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
                             "--server.port", str(port), "--server.headless", "true"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError("streamlit did not start")
    yield url
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def settle(page, timeout_s: float = 300) -> None:
    """Wait until Streamlit's script has finished (state notRunning for a full second)."""
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
    except Exception:  # noqa: BLE001 - playwright's TimeoutError; the test asserts what is missing
        pass


def visit(browser, url: str, shot: str, charts: int = 0):
    page = browser.new_page(viewport={"width": 1400, "height": 4000})
    page.goto(url, wait_until="domcontentloaded")
    settle(page)
    wait_for_charts(page, charts)
    page.screenshot(path=str(SHOTS / f"{shot}.png"), full_page=True)
    return page


def test_deep_link_on_a_fresh_server_reaches_our_page(server, browser):
    """FACTS.md: the first session of a new server landing on a deep link must get our
    navigation (grouped, translated) and the page itself, not the pages-folder fallback."""
    slug = PAGES[-1].slug
    page = visit(browser, f"{server}/{slug}?lang=id", f"deeplink-{slug}-id")
    try:
        assert page.locator("[data-testid='stException']").count() == 0
        title = load_texts(slug)["id"]["title"]
        assert title in page.locator("h1").first.inner_text()
        nav = page.locator("[data-testid='stSidebarNav']").inner_text()
        assert load_texts("common")["id"]["home"] in nav          # our labels, not file names
        assert "app" not in nav.lower().split()
    finally:
        page.close()


@pytest.mark.parametrize("lang", ["en", "id"])
def test_every_page_renders(server, browser, lang):
    common = load_texts("common")[lang]
    failures = []
    for c in [None] + PAGES:
        slug = c.slug if c else ""
        # reveal=1: a concept page draws the figure that answers its predict question only once
        # the visitor answered; the URL reveals every answer, so every figure must be drawn.
        query = f"lang={lang}&reveal=1" if c else f"lang={lang}"
        page = visit(browser, f"{server}/{slug}?{query}", f"{slug or 'home'}-{lang}", charts=1 if c else 0)
        try:
            if page.locator("[data-testid='stException']").count():
                failures.append(f"{slug}: exception box")
            text = page.locator("[data-testid='stMain']").inner_text()
            if c:
                if page.locator(".js-plotly-plot").count() < 1:
                    failures.append(f"{slug}: no Plotly chart")
                if load_texts(c.slug)[lang]["title"] not in text:
                    failures.append(f"{slug}: title not in {lang}")
                if common["check_it"] not in text:
                    failures.append(f"{slug}: no '{common['check_it']}' section")
                if page.locator("[class*='st-key-predict-']").count() < 1:     # st.container(key="predict-…")
                    failures.append(f"{slug}: no predict-then-reveal question")
                if common["fail"] in text.split():
                    failures.append(f"{slug}: a live check failed")
        finally:
            page.close()
    assert not failures, failures
