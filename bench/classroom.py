"""python -m bench --classroom : a class of thirty on one fresh server (issue 12).

Starts the server as `make run` does (lib.serving.serve: `streamlit run app.py`, whose background
pre-computation then starts at once) on its own port, waits for /_stcore/health and then
`--settle` seconds (90), then three scenarios, each 30 sessions at once over Streamlit's own websocket
protocol (lib.serving.page_visit: one rerun_script BackMsg per session, ForwardMsgs read until
script_finished):
- class_mix_crashed : 30 sessions over 10 pages in their default state; sessions with an
                      exception element, a missing page or no finished run (must be 0);
- class_same_p95_s  : 30 x temperature, default state (p95 of the sessions' times);
- class_diff_p95_s  : 30 x temperature, 30 different prompts;
- class_peak_rss_mb : server + children, sampled every 0.2 s over the whole run (and per phase:
                      class_peak_rss_mb_by_phase, settle / mix / same / diff);
- class_single_s / class_single_diff_s : one session alone (default / a new prompt), for scale;
- class_diff_equal_alone : of the 30 different prompts, how many pages showed the same generated
                      tokens (greedy and sampled) as that prompt alone on a second fresh server
                      (empty results folder, no background visitor, one visit at a time).
Results persisted by earlier servers (the cache folder) are used, as after a real restart;
`--cold` gives the server an empty results folder instead.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
MIX_PAGES = 10
SUBJECTS = ("France", "Japan", "Kenya", "Peru", "Norway", "Egypt", "Canada", "Vietnam", "Chile", "Spain",
            "Ghana", "Nepal", "Poland", "Cuba", "Iran", "Laos", "Mali", "Oman", "Fiji", "Chad",
            "Italy", "Brazil", "India", "Mexico", "Sweden", "Turkey", "Greece", "Kenya's neighbour Uganda",
            "Portugal", "Austria")


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(0.95 * len(xs)) - 1))]


class PeakRss:
    """Samples the memory of a process and all its children until stopped; keeps the peaks (MB):
    `peak` the sum of their RSS (a page two of them map, e.g. the weights file the server and a
    model-memory probe both read, counts twice), `peak_pss` the sum of their PSS (each physical
    page once, shared pages split among the processes that map them: what a host's memory
    limit counts). PSS needs /proc/<pid>/smaps_rollup (Linux); elsewhere it stays 0."""

    def __init__(self, pid: int, every_s: float = 0.2):
        self.proc, self.every_s = psutil.Process(pid), every_s
        self.peak = self.phase_peak = self.peak_pss = self.phase_peak_pss = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _tree(self) -> list:
        return [self.proc] + self.proc.children(recursive=True)

    def now(self) -> float:
        total = 0
        for p in self._tree():
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total / 2**20

    def now_pss(self) -> float:
        total = 0
        for p in self._tree():
            try:
                with open(f"/proc/{p.pid}/smaps_rollup") as f:
                    total += next(int(line.split()[1]) for line in f if line.startswith("Pss:")) * 1024
            except (OSError, StopIteration, ValueError):
                pass
        return total / 2**20

    def _run(self):
        while not self._stop.is_set():
            try:
                now, pss = self.now(), self.now_pss()
                self.peak, self.phase_peak = max(self.peak, now), max(self.phase_peak, now)
                self.peak_pss, self.phase_peak_pss = max(self.peak_pss, pss), max(self.phase_peak_pss, pss)
            except psutil.Error:
                pass
            self._stop.wait(self.every_s)

    def phase(self) -> float:
        """The peak RSS since the last call (MB), and start a new phase (`phase_pss()` first for
        the PSS peak of the same phase)."""
        peak, self.phase_peak = self.phase_peak, 0.0
        return round(peak)

    def phase_pss(self) -> float:
        """The peak PSS since the last call (MB), and start a new PSS phase."""
        peak, self.phase_peak_pss = self.phase_peak_pss, 0.0
        return round(peak)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join(timeout=5)
        return self.peak


def free_port() -> int:
    """A TCP port nobody listens on now (for a test's own server)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, env: dict | None = None, log=None, serve: bool = False):
    """A fresh `streamlit run app.py` on 127.0.0.1:port; returns (Popen, base url) once its
    health check answers. `serve=True` starts it as `make run` does (lib.serving.serve: its
    background work starts at once), else as a host that runs `streamlit run` itself (no script
    runs before the first visitor)."""
    e = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    how = ["-m", "lib.serving.serve"] if serve else ["-m", "streamlit", "run", str(ROOT / "app.py")]
    proc = subprocess.Popen([sys.executable, *how,
                             "--server.port", str(port), "--server.headless", "true",
                             "--server.address", "127.0.0.1"],
                            cwd=ROOT, env=e, stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}")
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=2)
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("streamlit did not answer its health check in 120 s")


def stop_server(proc) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def mix_pages() -> list[str]:
    from lib.concepts.catalog import CONCEPTS

    return [c.slug for c in CONCEPTS if c.exists][:MIX_PAGES]


RUN_TAG = f"Note {int(time.time()) % 100_000}."     # makes "new" prompts new on every run: results
                                                   # persisted by an earlier run must not answer them


def diff_queries(n: int = 30) -> list[str]:
    return [urllib.parse.urlencode({"prompt": f"{RUN_TAG} The capital of {SUBJECTS[i % len(SUBJECTS)]} is"})
            for i in range(n)]


def token_views(v) -> list[str]:
    """The visible text of a visit's token views (lib/ui/token_view.tokens_html: the prompt's
    tail and the generated tokens), without their tooltips' probabilities."""
    import html
    import re

    return [html.unescape(re.sub(r"<[^>]+>", "", h)) for h in v.htmls if "cursor:help" in h]


def alone_visits(queries: list[str]) -> list:
    """Each query on the temperature page alone, one after another, on a second fresh server
    with an empty results folder and no background visitor: nothing of the class can answer."""
    from lib.serving.page_visit import visit

    with tempfile.TemporaryDirectory(prefix="llm-lab-alone-") as folder:
        proc, url = start_server(free_port(), {"LLM_LAB_RESULTS": folder, "LLM_LAB_PREWARM": "0"})
        try:
            return [visit(url, "temperature", q, keep_texts=True) for q in queries]
        finally:
            stop_server(proc)


def _say(msg: str) -> None:
    print(f"[classroom {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(port: int = 8621, settle_s: float = 90.0, sessions: int = 30, cold: bool = False) -> dict:
    from bench.visitor import class_of, visit

    out: dict = {"class_sessions": sessions, "class_settle_s": settle_s, "class_cold_results": cold,
                 "class_cpus": os.cpu_count()}
    tmp = tempfile.TemporaryDirectory(prefix="llm-lab-results-") if cold else None
    env = {"LLM_LAB_RESULTS": tmp.name} if tmp else {}
    log = open(Path(tempfile.gettempdir()) / f"classroom-{port}.log", "wb")
    proc, url = start_server(port, env, log, serve=True)     # as `make run` starts it
    rss = PeakRss(proc.pid)
    try:
        _say(f"server up at {url}; settling {settle_s:.0f} s")
        time.sleep(settle_s)
        peaks = out["class_peak_rss_mb_by_phase"] = {"settle": rss.phase()}
        _say("mix: %d sessions over %d pages" % (sessions, MIX_PAGES))
        out["class_load_avg_start"] = os.getloadavg()[0]
        pages = mix_pages()
        mix = class_of(url, [(pages[i % len(pages)], "") for i in range(sessions)])
        crashed = [v for v in mix if v.crashed]
        out["class_mix_crashed"] = len(crashed)
        out["class_mix_pages"] = len(set(pages))
        out["class_mix_p95_s"] = round(p95([v.seconds for v in mix]), 2)
        out["class_mix_crashes"] = [f"{v.page}: {v.failure or (v.exceptions or ['page not found' if v.page_not_found else 'unfinished'])[0]}"[:200]
                                    for v in crashed][:5]
        peaks["mix"] = rss.phase()
        _say(f"mix done: {out['class_mix_crashed']} crashed, p95 {out['class_mix_p95_s']} s; single session")
        single = visit(url, "temperature", "")
        out["class_single_s"] = round(single.seconds, 2)
        _say(f"single {single.seconds:.1f} s; same: {sessions} x temperature")
        same = class_of(url, [("temperature", "")] * sessions)
        out["class_same_p95_s"] = round(p95([v.seconds for v in same]), 2)
        out["class_same_crashed"] = sum(v.crashed for v in same)
        peaks["same"] = rss.phase()
        one = visit(url, "temperature", urllib.parse.urlencode({"prompt": f"{RUN_TAG} A quiet morning in the village of"}))
        out["class_single_diff_s"] = round(one.seconds, 2)
        _say(f"same p95 {out['class_same_p95_s']} s; diff: {sessions} prompts")
        diff = class_of(url, [("temperature", q) for q in diff_queries(sessions)], keep_texts=True)
        out["class_diff_p95_s"] = round(p95([v.seconds for v in diff]), 2)
        out["class_diff_median_s"] = round(statistics.median(v.seconds for v in diff), 2)
        out["class_diff_crashed"] = sum(v.crashed for v in diff)
        peaks["diff"] = rss.phase()
        out["class_load_avg_end"] = os.getloadavg()[0]
    finally:
        out["class_peak_rss_mb"] = round(rss.stop())
        stop_server(proc)
        log.close()
        if tmp:
            tmp.cleanup()
    _say("each of the 30 prompts alone on a second fresh server")
    alone = alone_visits(diff_queries(sessions))
    same = [bool(token_views(a)) and token_views(a) == token_views(d) for a, d in zip(alone, diff)]
    out["class_diff_equal_alone"] = sum(same)
    out["class_diff_unequal"] = [f"{d.query}: class {token_views(d)} alone {token_views(a)}"[:400]
                                 for a, d, ok in zip(alone, diff, same) if not ok][:3]
    return out
