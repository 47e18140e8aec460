"""Screenshot pages of a running app, the way the browser tests see them.

    .venv/bin/python -m tests.browser.shoot http://127.0.0.1:8501/gqa "http://127.0.0.1:8501/gqa?lang=id" --out /tmp/shots
    .venv/bin/python -m tests.browser.shoot URL... --viewport 390x844 --out /tmp/phone   # a phone
    .venv/bin/python -m tests.browser.shoot URL... --viewport 1280x720 --fold            # a projector's first screen

Each URL is opened in headless Chromium (the flags of the browser tests), the script waits
until Streamlit has finished and every Plotly chart is drawn (a concept page has at least
one), then saves a PNG of the whole page (the viewport grown to the page's height; `--fold`: only
the first screen) and prints what does not
fit the viewport (bench.browser.LAYOUT_PROBLEMS: sideways scrolling, cut tables and titles).
The PNG's name ends in the viewport, e.g. `127-0-0-1-8630-gqa-lang-id@390x844.png`.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path
from urllib.parse import urlparse

from bench.browser import CHROMIUM, FLAGS, LAYOUT_PROBLEMS, settle, wait_for_charts


PAGE_HEIGHT = """() => {
    const main = document.querySelector("[data-testid='stMain']");
    return Math.ceil(Math.max(main ? main.scrollHeight : 0, document.documentElement.scrollHeight));
}"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("urls", nargs="+")
    ap.add_argument("--out", default="artifacts/screenshots/manual")
    ap.add_argument("--viewport", default="1400x1800", help="WIDTHxHEIGHT, e.g. 390x844 (a phone), 1280x720")
    ap.add_argument("--fold", action="store_true", help="only the first screen, not the full page")
    a = ap.parse_args()
    width, height = (int(v) for v in a.viewport.lower().split("x"))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        for url in a.urls:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(url, wait_until="domcontentloaded")
            try:
                settle(page)
            except TimeoutError as e:                     # shoot what there is and say so
                print(url, f"({e})")
            wait_for_charts(page, 0 if urlparse(url).path in ("", "/") else 1, 60)   # concept pages have charts
            page.wait_for_timeout(500)                  # Plotly's responsive relayout after the last chart
            problems = page.evaluate(LAYOUT_PROBLEMS)     # at the viewport asked for, before any resize
            if not a.fold:         # the app scrolls inside its main column, not the document: grow the
                tall = page.evaluate(PAGE_HEIGHT)          # viewport to the whole column to shoot all of it
                page.set_viewport_size({"width": width, "height": min(max(tall, height), 16000)})
                page.wait_for_timeout(800)
            name = re.sub(r"[^A-Za-z0-9]+", "-", url.split("://", 1)[-1]).strip("-") + f"@{width}x{height}.png"
            page.screenshot(path=str(out / name), full_page=not a.fold)
            errors = page.locator("[data-testid='stException']").count()
            print(out / name, f"({errors} exception boxes)" if errors else "")
            for problem in problems:
                print("   ", problem)
            page.close()
        browser.close()


if __name__ == "__main__":
    main()
