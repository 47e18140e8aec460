"""`python -m bench --explore`: how fast every page answers a student's own change (issue 29).

A fresh server, started as `make run` starts it (lib.serving.serve), with an empty results
folder: the background pre-computation computes every page's default state, and the benchmark
waits until it says it is done (its "[prewarm] done" line). Then, one visitor at a time, on
every concept page:
- an own prompt in English and one in Indonesian (new on every run: RUN_TAG), where the page
  has a prompt;
- each control set to its minimum and its maximum (the URL values the page's controls recorded,
  lib/ui/state.CONTROLS, written by the server to LLM_LAB_CONTROLS_OUT).
Each change is one visit (the page opened with that URL, as a student's changed control reruns
the page), with `reveal=1`: a student exploring has answered the page's questions (the answer
stays through a control's change), so every figure and check is drawn and timed. Seconds until the first Plotly chart arrived and until the page was complete (a
script run finished with no st.progress bar left: the completion contract).
Then thirty sessions at once, each a different page or prompt with one change: first-chart
and complete p95, crashes, the server's peak RSS with its children (and their peak PSS: each
physical page once, where the RSS sum counts a page two processes map twice), and whether each
session's token views equal the ones that change showed alone.
Goals (issue 29): one visitor, first figure <= 1 s and complete <= 2 s (p95), timing sweeps and
runs over 1,000 tokens <= 10 s; thirty at once, first figure p95 <= 5 s, complete p95 <= 20 s,
0 crashes, peak RSS <= 2.2 GB.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

from bench.classroom import RUN_TAG, PeakRss, p95, start_server, stop_server, token_views

OWN = {"en": "{tag} My grandmother grew tomatoes, beans and chillies in a small garden behind the house, and every",
       "id": "{tag} Nenek saya menanam tomat, buncis dan cabai di kebun kecil di belakang rumah, dan setiap"}
PREWARM_TIMEOUT_S = 3600.0
VISIT_TIMEOUT_S = 300.0
REVEAL = {"reveal": 1}


def _say(msg: str) -> None:
    print(f"[explore {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def wait_for_prewarm(log_path: Path, proc, timeout_s: float = PREWARM_TIMEOUT_S) -> str:
    """Wait for the server's "[prewarm] done" line; returns it."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        for line in log_path.read_text(errors="replace").splitlines():
            if line.startswith("[prewarm] done"):
                return line
        time.sleep(2.0)
    raise RuntimeError(f"the background pre-computation did not finish in {timeout_s:.0f} s")


def cases(controls: dict, pages: list[str], tag: str = RUN_TAG, where=("min", "max")) -> list[tuple[str, str, str]]:
    """(page, what, query) of every change to try: own prompts (new: `tag`), then each
    control at its minimum and maximum (or, where=("middle",), at the value between); every
    query with reveal=1 (the questions answered: the whole page)."""
    out = []
    at = {"min": 0, "middle": 1, "max": -1}
    for page in pages:
        mine = controls.get(page, {})
        if "prompt" in mine:
            for lang, text in OWN.items():
                query = {"prompt": text.format(tag=tag)} | ({"lang": lang} if lang != "en" else {}) | REVEAL
                out.append((page, f"own prompt ({lang})", urllib.parse.urlencode(query)))
        for name, c in sorted(mine.items()):
            if c["kind"] == "text" or not c["values"]:
                continue
            for end in where:
                value = c["values"][at[end]] if len(c["values"]) > 2 or end != "middle" else None
                if value is not None and value != c["default"]:
                    out.append((page, f"{name}={value} ({end})", urllib.parse.urlencode({name: value} | REVEAL)))
    return out


def class_mix(todo: list[tuple[str, str, str]], pages: list[str], sessions: int) -> list[tuple[str, str, str]]:
    """`sessions` changes, round robin over the pages: a different page or prompt each."""
    by_page: dict[str, list] = {}
    for case in todo:
        by_page.setdefault(case[0], []).append(case)
    mix, i = [], 0
    while len(mix) < sessions and any(by_page.values()):
        page = pages[i % len(pages)]
        if by_page.get(page):
            mix.append(by_page[page].pop(0))
        i += 1
    return mix


def alone_on_a_fresh_server(mix: list[tuple[str, str, str]]) -> list:
    """Each change alone, one after another, on a second fresh server with an empty results
    folder and no background visitor: nothing of the class can answer for it."""
    from bench.classroom import free_port
    from bench.visitor import visit

    with tempfile.TemporaryDirectory(prefix="llm-lab-alone-") as folder:
        proc, url = start_server(free_port(), {"LLM_LAB_RESULTS": folder, "LLM_LAB_PREWARM": "0"})
        try:
            return [visit(url, p, q, timeout_s=VISIT_TIMEOUT_S, keep_texts=True, until_complete=True)
                    for p, _, q in mix]
        finally:
            stop_server(proc)


def row(page: str, what: str, v) -> dict:
    return {"page": page, "change": what, "first_chart_s": None if v.first_chart_s is None else round(v.first_chart_s, 2),
            "complete_s": round(v.seconds, 2), "crashed": v.crashed, "progress_left": v.progress_left,
            "why": (v.failure or (v.exceptions or [""])[0])[:200] if v.crashed else ""}


def summary(rows: list[dict], prefix: str) -> dict:
    done = [r for r in rows if not r["crashed"]]
    firsts = [r["first_chart_s"] for r in done if r["first_chart_s"] is not None]
    completes = [r["complete_s"] for r in done]
    return {f"{prefix}_cases": len(rows), f"{prefix}_crashed": len(rows) - len(done),
            f"{prefix}_first_chart_p95_s": round(p95(firsts), 2) if firsts else None,
            f"{prefix}_first_chart_median_s": round(statistics.median(firsts), 2) if firsts else None,
            f"{prefix}_complete_p95_s": round(p95(completes), 2) if completes else None,
            f"{prefix}_complete_median_s": round(statistics.median(completes), 2) if completes else None,
            f"{prefix}_over_2s": sum(c > 2.0 for c in completes),
            f"{prefix}_first_chart_over_1s": sum(f > 1.0 for f in firsts)}


def stale_work_stops(url: str, alone: list[dict], pages: int = 3) -> list[dict]:
    """On the pages whose own prompt took longest alone: a new own prompt, then, 1 s later, back
    to the default (bench/stale_work.py). `stale_stop_s`: how long the stale prompt still held
    the session; without cancellation it would be about `slow_alone_s` - 1."""
    from bench.stale_work import change_twice

    slow = sorted((r for r in alone if r["change"] == "own prompt (en)" and not r["crashed"]),
                  key=lambda r: -r["complete_s"])[:pages]
    out = []
    for r in slow:
        back = change_twice(url, r["page"], OWN["en"].format(tag=RUN_TAG + " C."))
        default = change_twice(url, r["page"], None)                     # the default alone, cached
        out.append({"page": r["page"], "slow_alone_s": r["complete_s"], "back_to_default_s": round(back, 2),
                    "default_alone_s": round(default, 2), "stale_stop_s": round(max(0.0, back - default), 2)})
        _say(f"stale work on {r['page']}: {out[-1]}")
    return out


def run(port: int = 8631, sessions: int = 30, reuse_results: bool = False, only: str = "",
        prewarm: bool = True, class_only: bool = False) -> dict:
    from bench.visitor import class_of, visit
    from lib.concepts.catalog import CONCEPTS

    pages = [c.slug for c in CONCEPTS if c.exists and (not only or c.slug in only.split(","))]
    out: dict = {"explore_pages": len(pages), "explore_cpus": os.cpu_count(), "explore_run_tag": RUN_TAG}
    work = tempfile.TemporaryDirectory(prefix="llm-lab-explore-")
    controls_file = Path(work.name) / "controls.json"
    env = {"LLM_LAB_CONTROLS_OUT": str(controls_file)}
    if not reuse_results:
        env["LLM_LAB_RESULTS"] = str(Path(work.name) / "results")
    if not prewarm:                       # a quick look: each page's default opened by this visitor
        env["LLM_LAB_PREWARM"] = "0"
    log_path = Path(work.name) / "server.log"
    log = open(log_path, "wb")
    proc, url = start_server(port, env, log, serve=True)
    rss = PeakRss(proc.pid)
    try:
        t0 = time.perf_counter()
        _say(f"server up at {url}; waiting for the background pre-computation")
        out["explore_prewarm"] = wait_for_prewarm(log_path, proc) if prewarm else "off"
        out["explore_prewarm_wait_s"] = round(time.perf_counter() - t0)
        defaults = [visit(url, page, urllib.parse.urlencode(REVEAL), timeout_s=VISIT_TIMEOUT_S, until_complete=True)
                    for page in pages]      # answered: the controls an answer unlocks are recorded too
        out["explore_default_crashed"] = [v.page for v in defaults if v.crashed]
        controls = json.loads(controls_file.read_text())
        todo = cases(controls, pages)
        _say(f"{out['explore_prewarm']}; {len(todo)} changes, one visitor at a time")
        out["explore_load_avg_start"] = round(os.getloadavg()[0], 2)
        rss.phase(), rss.phase_pss()
        alone = []
        for page, what, query in ([] if class_only else todo):
            v = visit(url, page, query, timeout_s=VISIT_TIMEOUT_S, keep_texts=True, until_complete=True)
            alone.append(row(page, what, v))
            _say(f"{page} {what}: first chart {alone[-1]['first_chart_s']} s, complete {alone[-1]['complete_s']} s"
                 + (f" CRASHED {alone[-1]['why']}" if v.crashed else ""))
        if not class_only:
            out["explore_one_peak_rss_mb"], out["explore_one_peak_pss_mb"] = rss.phase(), rss.phase_pss()
            out.update(summary(alone, "explore_one"))
            out["explore_one_prompt_complete_median_s"] = round(statistics.median(
                [r["complete_s"] for r in alone if r["change"].startswith("own prompt") and not r["crashed"]] or [0]), 2)
            out["explore_one_slowest"] = sorted(alone, key=lambda r: -r["complete_s"])[:12]
            out["explore_one_rows"] = alone
            out["explore_stale"] = stale_work_stops(url, alone)
        # thirty at once: changes nobody made yet (controls between their ends, new prompts)
        mix = class_mix(cases(controls, pages, tag=RUN_TAG + " B.", where=("middle",)), pages, sessions)
        _say(f"{len(mix)} sessions at once")
        out["explore_class_sessions"] = len(mix)
        out["explore_class_load_avg_start"] = round(os.getloadavg()[0], 2)
        together = class_of(url, [(p, q) for p, _, q in mix], timeout_s=900, keep_texts=True, until_complete=True)
        rows = [row(p, w, v) for (p, w, _), v in zip(mix, together)]
        out.update(summary(rows, "explore_class"))
        out["explore_class_peak_rss_mb"], out["explore_class_peak_pss_mb"] = rss.phase(), rss.phase_pss()
        out["explore_class_crashes"] = [f"{r['page']} {r['change']}: {r['why']}" for r in rows if r["crashed"]][:5]
        out["explore_class_rows"] = rows
    finally:
        out["explore_peak_rss_mb"] = round(rss.stop())
        out["explore_peak_pss_mb"] = round(rss.peak_pss)
        stop_server(proc)
        log.close()
        work.cleanup()
    if class_only:
        out["explore_class_equal_alone"] = "not compared (--class-only)"
        return out
    _say("each of the class's changes alone on a second fresh server")
    alone_views = [token_views(v) for v in alone_on_a_fresh_server(mix)]
    compared = [(f"{p}?{q}", a, token_views(v)) for (p, _, q), v, a in zip(mix, together, alone_views) if a]
    out["explore_class_equal_alone"] = f"{sum(a == b for _, a, b in compared)}/{len(compared)} (changes with token views)"
    out["explore_class_unequal"] = [w[:120] for w, a, b in compared if a != b][:5]
    return out
