"""The whole app in headless Chromium: a fresh server, every page in English and Indonesian.

Screenshots are kept in artifacts/screenshots/ (CI keeps them)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.classroom import free_port, start_server, stop_server
from bench.browser import CHROMIUM, FLAGS, LAYOUT_PROBLEMS, settle, wait_for_charts  # noqa: F401 (re-exported)
from lib.concepts.catalog import CONCEPTS
from lib.ui.i18n import load_texts
from lib.ui.responsive import WIDE_KEY, WIDE_PX
from lib.ui.shell import TEACHING_PAGES
from tests.conftest import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.real_model]
SHOTS = ROOT / "artifacts" / "screenshots"
PAGES = [c for c in CONCEPTS if c.exists]
PHONE = {"width": 390, "height": 4000}     # a phone's width (390x844); tall, so the shot holds the page
# every chart re-laid out for the new width (Plotly's responsive resize): within the screen, or
# within WIDE_PX for one kept wide in its sideways-scrolling box (page.figure(wide=True))
CHARTS_FIT = """([w, key, wide]) => [...document.querySelectorAll('.js-plotly-plot svg.main-svg')]
    .every(s => s.getBoundingClientRect().width <= (s.closest(`[class*='st-key-${key}']`) ? wide + 1 : w))"""


@pytest.fixture(scope="module")
def server():
    """A freshly started `streamlit run app.py` (the model is prepared but not yet loaded), on
    $LAB_TEST_PORT when set (a shared machine's own port range), else on a free port."""
    from lib.model import bundled_model

    bundled_model.prepare()
    proc, url = start_server(int(os.environ.get("LAB_TEST_PORT") or free_port()))
    yield url
    stop_server(proc)


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


def visit(browser, url: str, shot: str, charts: int = 0):
    page = browser.new_page(viewport={"width": 1400, "height": 4000})
    try:
        page.goto(url, wait_until="domcontentloaded")
        settle(page)
    except Exception:
        page.close()
        raise
    wait_for_charts(page, charts)
    page.screenshot(path=str(SHOTS / f"{shot}.png"), full_page=True)
    return page


def phone_problems(page, shot: str) -> list[str]:
    """Shrink an open page to a phone's width (the same visit: no second cold render) and say
    what does not fit (bench.browser.LAYOUT_PROBLEMS: sideways scrolling, elements wider than
    the screen outside a scrolling box, chart titles wider than their chart)."""
    page.set_viewport_size(PHONE)
    try:
        page.wait_for_function(CHARTS_FIT, arg=[PHONE["width"], WIDE_KEY, WIDE_PX], timeout=15_000)
    except Exception:  # noqa: BLE001 - playwright's TimeoutError: the probe below names the wide chart
        pass
    page.wait_for_timeout(400)
    page.screenshot(path=str(SHOTS / f"{shot}-390.png"), full_page=True)
    return page.evaluate(LAYOUT_PROBLEMS)


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
    """Every page at 1,400 px: no exception, its charts, title, checks and question, no failed
    check; then the same visit at 390 px (a phone, issue 33): nothing wider than the screen.
    The teaching pages (lessons, life of a token, glossary) are checked at both widths too."""
    common = load_texts("common")[lang]
    failures = []
    for c in [None] + PAGES + [slug for slug, _ in TEACHING_PAGES]:
        slug, c = (c, None) if isinstance(c, str) else (c.slug if c else "", c)
        # reveal=1: a concept page draws the figure that answers its predict question only once
        # the visitor answered; the URL reveals every answer, so every figure must be drawn.
        query = f"lang={lang}&reveal=1" if c else f"lang={lang}"
        try:
            page = visit(browser, f"{server}/{slug}?{query}", f"{slug or 'home'}-{lang}",
                         charts=1 if c or slug == "life-of-a-token" else 0)
        except TimeoutError as e:          # record it and go on: one slow page must not hide the others
            failures.append(f"{slug}: {e}")
            continue
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
                if common["fail"] in text.split():   # name the failed check and its numbers (CI logs are all we get)
                    lines = text.splitlines()
                    failed = [" ".join(lines[i:i + 2]) for i, line in enumerate(lines) if common["fail"] in line.split()]
                    failures.append(f"{slug}: a live check failed: {failed}")
            failures += [f"{slug or 'home'} at 390 px: {p}" for p in phone_problems(page, f"{slug or 'home'}-{lang}")]
        finally:
            page.close()
    assert not failures, failures
