"""The whole app in headless Chromium: a fresh server (tests/browser/conftest.py, shared by
every browser module), every page in English and Indonesian, each rendered once per language
and checked at 1,400 px and at a phone's 390 px in the same visit.

Screenshots are kept in artifacts/screenshots/ (CI keeps them)."""
from __future__ import annotations

import pytest

from bench.browser import LAYOUT_PROBLEMS
from lib.concepts.catalog import CONCEPTS
from lib.ui.i18n import load_texts
from lib.ui.responsive import WIDE_KEY, WIDE_PX
from lib.ui.shell import TEACHING_PAGES
from tests.browser.conftest import ACTION_MS, shot_path, visit

pytestmark = [pytest.mark.browser, pytest.mark.real_model]
PAGES = [c for c in CONCEPTS if c.exists]
# charts each teaching page draws by default (a concept page draws at least one)
TEACHING_CHARTS = {"life-of-a-token": 3}
PHONE = {"width": 390, "height": 4000}     # a phone's width (390x844); tall, so the shot holds the page
# every chart re-laid out for the new width (Plotly's responsive resize): within the screen, or
# within WIDE_PX for one kept wide in its sideways-scrolling box (page.figure(wide=True))
CHARTS_FIT = """([w, key, wide]) => [...document.querySelectorAll('.js-plotly-plot svg.main-svg')]
    .every(s => s.getBoundingClientRect().width <= (s.closest(`[class*='st-key-${key}']`) ? wide + 1 : w))"""


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
    page.screenshot(path=shot_path(f"{shot}-390"), full_page=True, type="jpeg", quality=80)
    return page.evaluate(LAYOUT_PROBLEMS)


def test_deep_link_on_a_fresh_server_reaches_our_page(server, browser):
    """FACTS.md: the first session of a new server landing on a deep link must get our
    navigation (grouped, translated) and the page itself, not the pages-folder fallback."""
    slug = PAGES[-1].slug
    page = visit(browser, f"{server}/{slug}?lang=id", f"deeplink-{slug}-id")
    assert page.locator("[data-testid='stException']").count() == 0
    title = load_texts(slug)["id"]["title"]
    assert title in page.locator("h1").first.inner_text()
    nav = page.locator("[data-testid='stSidebarNav']").inner_text()
    assert load_texts("common")["id"]["home"] in nav          # our labels, not file names
    assert "app" not in nav.lower().split()


@pytest.mark.parametrize("lang", ["en", "id"])
def test_every_page_renders(server, browser, lang):
    """Every page at 1,400 px: no exception, its charts, title, checks and question, no failed
    check; then the same visit at 390 px (a phone, issue 33): nothing wider than the screen.
    The teaching pages (lessons, life of a token, glossary, model check) are checked the same
    way: no exception, their title in the language, the charts they draw, both widths."""
    common = load_texts("common")[lang]
    failures = []
    for c in [None] + PAGES + [slug for slug, _ in TEACHING_PAGES]:
        slug, c = (c, None) if isinstance(c, str) else (c.slug if c else "", c)
        # reveal=1: a concept page draws the figure that answers its predict question only once
        # the visitor answered; the URL reveals every answer, so every figure must be drawn.
        query = f"lang={lang}&reveal=1" if c else f"lang={lang}"
        try:
            charts = 1 if c else TEACHING_CHARTS.get(slug, 0)
            page = visit(browser, f"{server}/{slug}?{query}", f"{slug or 'home'}-{lang}", charts=charts)
        except TimeoutError as e:          # record it and go on: one slow page must not hide the others
            failures.append(f"{slug}: {e}")
            continue
        if page.locator("[data-testid='stException']").count():
            failures.append(f"{slug}: exception box")
        text = page.locator("[data-testid='stMain']").inner_text()
        if slug and not c and load_texts(slug)[lang]["title"] not in text:
            failures.append(f"{slug}: title not in {lang}")
        if slug and not c and page.locator(".js-plotly-plot").count() < charts:
            failures.append(f"{slug}: fewer than {charts} charts")
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
    assert not failures, failures


def test_beam_search_draws_its_tree_while_a_new_search_runs(server):
    """Issue 29: a search no run has computed yet (a new prompt) draws its tree as it grows, under
    a progress bar, then the page; once done no bar is left (the completion contract, as
    lib/serving/page_visit.py reads it: a bar inside an emptied box is gone)."""
    import urllib.parse
    from concurrent.futures import ThreadPoolExecutor

    from bench.classroom import RUN_TAG
    from lib.serving.page_visit import visit as ws_visit

    query = urllib.parse.urlencode({"prompt": f"{RUN_TAG} The oldest bridge in the city", "n": 12})
    with ThreadPoolExecutor(1) as other:     # its own thread: Playwright's loop runs in this one
        v = other.submit(ws_visit, server, "beam-search", query, timeout_s=ACTION_MS / 1000,
                         until_complete=True).result()
    assert not v.crashed and v.progress_left == 0, (v.failure, v.exceptions)
    assert v.charts >= 3          # the tree and the probability figure of the page, and the tree so far
