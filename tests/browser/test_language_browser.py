"""The language choice in a real browser (issue 12): a shared `?lang=id` link must not lock a
visitor into Indonesian. Opens a page with ?lang=id, then chooses English, Indonesian, English
in the sidebar; every switch shows the page in the chosen language and the URL follows."""
from __future__ import annotations

import pytest

from lib.ui.i18n import load_texts
from bench.browser import settle

pytestmark = [pytest.mark.browser, pytest.mark.real_model]
SLUG = "stable-softmax"          # a quick page


def title_now(page) -> str:
    return page.locator("h1").first.inner_text()


def thumbs(page, expect: str | None = None) -> list[str]:
    """The value labels on the page's sliders (waiting up to 60 s for `expect` among them)."""
    for _ in range(120):
        found = page.locator("[data-testid='stSliderThumbValue']").all_inner_texts()
        if expect is None or expect in found:
            return found
        page.wait_for_timeout(500)
    return found


def choose(page, lang_name: str) -> None:
    page.locator("[data-testid='stSidebar'] [data-testid='stRadio'] label", has_text=lang_name).first.click()
    page.wait_for_timeout(500)
    settle(page)


def test_language_round_trip_id_en_id_en(server, browser):
    titles = {lang: load_texts(SLUG)[lang]["title"] for lang in ("en", "id")}
    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    try:
        page.goto(f"{server}/{SLUG}?lang=id&scale=2.5", wait_until="domcontentloaded")
        settle(page)
        assert titles["id"] in title_now(page)
        assert "2,50" in thumbs(page, "2,50"), thumbs(page)           # Indonesian decimal comma on the slider
        for name, lang in (("English", "en"), ("Bahasa Indonesia", "id"), ("English", "en")):
            choose(page, name)
            assert titles[lang] in title_now(page), (lang, title_now(page))
            assert ("lang=id" in page.url) == (lang == "id"), page.url
            assert "scale=2.5" in page.url, page.url          # the slider keeps its value across languages
            want = {"en": "2.50", "id": "2,50"}[lang]
            assert want in thumbs(page, want), (lang, thumbs(page))
            assert page.locator("[data-testid='stException']").count() == 0
    finally:
        page.close()


def test_invalid_lang_gets_a_note(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    try:
        page.goto(f"{server}/{SLUG}?lang=..%2F..%2Fetc", wait_until="domcontentloaded")
        settle(page)
        notes = page.locator("[data-testid='stAlert']").all_inner_texts()
        assert any("lang" in n and "../../etc" in n for n in notes), notes
        assert titles_en_in(page)
    finally:
        page.close()


def titles_en_in(page) -> bool:
    return load_texts(SLUG)["en"]["title"] in title_now(page)
