"""Teaching features in headless Chromium (issue 14, 33): the presenter view on a
projector-sized window (1280x720), a glossary anchor, "Prepare this lesson". The teaching
pages' plain render in both languages is part of test_browser.test_every_page_renders.
Screenshots go to artifacts/screenshots/ like the main browser test."""
from __future__ import annotations

import pytest

from bench.browser import settle
from lib.ui.i18n import load_texts
from tests.browser.conftest import SETTLE_S, visit

pytestmark = [pytest.mark.browser, pytest.mark.real_model]


def test_presenter_view_on_a_projector(server, browser):
    """?view=present at 1280x720: no 'The code', the toggle is on, nothing wider than the window.
    Answered (reveal=1): the charts that answer the questions are drawn, and measured too."""
    page = visit(browser, f"{server}/temperature?view=present&reveal=1", "present-temperature-1280x720", 1, 1280, 720)
    assert page.locator("[data-testid='stException']").count() == 0
    text = page.locator("[data-testid='stMain']").inner_text()
    common = load_texts("common")["en"]
    assert common["the_code"] not in text
    assert common["what_to_notice"] in text
    assert page.locator("[data-testid='stSidebar'] input[type='checkbox']").first.is_checked()
    too_wide = page.evaluate("""() => [...document.querySelectorAll(
        "[data-testid='stMain'] table, [data-testid='stMain'] .js-plotly-plot")]
        .filter(el => el.getBoundingClientRect().right > window.innerWidth + 1).length""")
    assert too_wide == 0


def test_glossary_anchor_exists(server, browser):
    page = visit(browser, f"{server}/glossary?lang=id#kv-cache", "teaching-glossary-anchor-id")
    assert page.locator("#kv-cache").count() == 1
    assert "KV cache" in page.locator("#kv-cache").inner_text()


def test_prepare_this_lesson_opens_every_step_on_the_server(server, browser):
    """"Prepare this lesson" on a real server (issue 33): every step's page is opened through
    Streamlit's own protocol (lib/serving/page_visit.py), a progress bar shows, and when it is gone the
    page says the whole lesson was prepared and how long it took (not "partly": every page ran).
    The speculative lesson: 4 steps, ~25 s on a shared 2-core machine."""
    texts = load_texts("lessons")["id"]
    page = visit(browser, f"{server}/lessons?lesson=speculative&step=1&lang=id", "lessons-prepare-id", 0, 1280, 900)
    page.get_by_role("button", name=texts["prepare"]).click()
    page.wait_for_selector("[data-testid='stProgress']", timeout=60_000)
    done = page.locator("[data-testid='stAlertContentSuccess']").filter(has_text=texts["prepared"].split("{")[0])
    done.wait_for(timeout=SETTLE_S * 1000)
    settle(page, SETTLE_S)
    assert page.locator("[data-testid='stProgress']").count() == 0
    assert page.locator("[data-testid='stAlertContentWarning']").count() == 0, "some pages were not opened"
    assert "4 langkah" in done.inner_text() and "detik" in done.inner_text()
    step_box = page.locator(".st-key-lesson-step").inner_text()
    assert texts["step_ready"].split("{")[0] in step_box         # the step says it was prepared
