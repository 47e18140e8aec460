"""Screenshot pages of a running app, the way the browser tests see them.

    .venv/bin/python -m tests.browser.shoot http://127.0.0.1:8501/gqa "http://127.0.0.1:8501/gqa?lang=id" --out /tmp/shots

Each URL is opened in headless Chromium (the flags of the browser tests), the script waits
until Streamlit has finished and every Plotly chart is drawn (a concept page has at least
one), then saves a full-page PNG; pass a --height taller than the page to see all of it.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path
from urllib.parse import urlparse

from tests.browser.test_browser import CHROMIUM, FLAGS, settle, wait_for_charts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("urls", nargs="+")
    ap.add_argument("--out", default="artifacts/screenshots/manual")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1800)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        for url in a.urls:
            page = browser.new_page(viewport={"width": a.width, "height": a.height})
            page.goto(url, wait_until="domcontentloaded")
            settle(page)
            wait_for_charts(page, 0 if urlparse(url).path in ("", "/") else 1, 60)   # concept pages have charts
            name = re.sub(r"[^A-Za-z0-9]+", "-", url.split("://", 1)[-1]).strip("-") + ".png"
            page.screenshot(path=str(out / name), full_page=True)
            errors = page.locator("[data-testid='stException']").count()
            print(out / name, f"({errors} exception boxes)" if errors else "")
            page.close()
        browser.close()


if __name__ == "__main__":
    main()
