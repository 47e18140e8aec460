"""Headless Chromium as the tests and the benchmark drive it: Debian's chromium with the
project's flags, and when a Streamlit page counts as done (script finished, charts drawn)."""
from __future__ import annotations

import time

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


# The completion contract (issue 29 item 6): a page is complete when a script run has finished
# (Streamlit's state reads "initial" until the first run ends, "notRunning" after it) and no
# `st.progress` bar is left on it (a part still computing shows one until its rerun removes it).
COMPLETE = """() => document.querySelector("[data-testid='stApp']")?.getAttribute('data-test-script-state')
    === 'notRunning' && !document.querySelector("[data-testid='stProgress']")"""


def settle(page, timeout_s: float = 300, quiet_s: float = 0.5) -> None:
    """Wait until the page is complete (COMPLETE above) and stays so for quiet_s in a row (a
    fragment or a background job's rerun may start right after a run ends). Raises TimeoutError
    if it never is."""
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout_s * 1000)
    end, quiet = time.time() + timeout_s, None
    while time.time() < end:
        if page.evaluate(COMPLETE):
            quiet = quiet or time.time()
            if time.time() - quiet >= quiet_s:
                return
        else:
            quiet = None
        time.sleep(0.1)
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


# What a phone visitor would see cut off or scrolling sideways (issue 33): a list of short
# descriptions, empty when the page fits. A page that scrolls horizontally; an element of the
# main column wider than the viewport (or sticking out of it) that no scrolling box holds; a
# Plotly title or subplot title (annotation) wider than its chart, i.e. cut off.
LAYOUT_PROBLEMS = """() => {
    const vw = document.documentElement.clientWidth, out = [];
    const name = el => (el.getAttribute('data-testid') || el.tagName.toLowerCase())
        + (el.className && el.className.baseVal === undefined && typeof el.className === 'string'
           ? '.' + el.className.split(' ').filter(c => c && !c.startsWith('st-emotion')).slice(0, 2).join('.') : '')
        + ' "' + (el.innerText || el.textContent || '').trim().slice(0, 40).replace(/\\s+/g, ' ') + '"';
    const main = document.querySelector("[data-testid='stMain']");
    for (const el of [document.documentElement, document.querySelector("[data-testid='stAppViewContainer']"), main])
        if (el && el.scrollWidth > el.clientWidth + 1)
            out.push(`page scrolls sideways: ${name(el).split(' ')[0]} scrollWidth ${el.scrollWidth} > ${el.clientWidth}`);
    // a box of the page's own that scrolls sideways (a table's), not the app's scrolling main column
    const scrolls = el => { for (let p = el.parentElement; p && p !== main && p !== document.body; p = p.parentElement) {
        const ox = getComputedStyle(p).overflowX;
        if ((ox === 'auto' || ox === 'scroll') && p.getBoundingClientRect().right <= vw + 1) return true; }
        return false; };
    // visually hidden (a slider's screen-reader input: clipped to nothing), invisible, or in a
    // closed expander (laid out again at the phone's width when the visitor opens it)
    const hidden = el => { if (el.closest('details:not([open])')) return true;
        for (let p = el; p && p !== main; p = p.parentElement) {
        const s = getComputedStyle(p);
        if ((s.clipPath && s.clipPath !== 'none') || (s.clip && s.clip !== 'auto') || s.visibility === 'hidden'
            || s.opacity === '0') return true; }
        return false; };
    const seen = new Set();
    for (const el of main ? main.querySelectorAll('*') : []) {
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.height === 0 || el.closest('.js-plotly-plot .hoverlayer')) continue;
        if ((r.right > vw + 1 || r.left < -1) && !scrolls(el) && !hidden(el)) {
            const parent = el.parentElement && el.parentElement.getBoundingClientRect();
            if (parent && (parent.right > vw + 1 || parent.left < -1) && seen.has(el.parentElement)) { seen.add(el); continue; }
            seen.add(el);
            out.push(`wider than the screen (${Math.round(r.left)}..${Math.round(r.right)} of ${vw}): ${name(el)}`);
        }
    }
    for (const plot of document.querySelectorAll('.js-plotly-plot')) {
        const svg = plot.querySelector('svg.main-svg'); if (!svg) continue;
        const box = svg.getBoundingClientRect();
        for (const t of plot.querySelectorAll('.gtitle, .infolayer .annotation-text')) {
            const r = t.getBoundingClientRect();
            if (r.width && (r.left < box.left - 1 || r.right > box.right + 1))
                out.push(`chart text cut off (${Math.round(r.width)} px in a ${Math.round(box.width)} px chart): "${t.textContent.slice(0, 60)}"`);
        }
    }
    return out;
}"""
