"""Hosting figures: memory of a first start, and of one visitor's tour of a fresh server.

    python -m bench --only hosting        (or: python -m bench.hosting)

- `prepare_peak_rss_mb`: `python -m lib.model.bundled_model` in a fresh process on an empty
  cache (LLM_LAB_CACHE = a new temporary folder, so the GGUF is assembled too); the peak is
  the child's VmHWM (what `/usr/bin/time -v` reports as maximum resident set size). Target <= 1500.
- `tour_peak_rss_mb`: a fresh `streamlit run app.py` (port 8616); headless Chromium opens the
  home page and every concept page, English then Indonesian, one after another, each until
  its script has finished; psutil samples the resident memory of the server and all of its
  child processes (the model-memory probes included) every 0.1 s. Target <= 2000. The server
  starts with an empty results folder (LLM_LAB_RESULTS), as after a deploy: every page
  computes, and the background pre-computation runs beside the visitor.
  `tour_peak_pss_mb` is the same peak counting pages shared between those processes once
  (the memory-mapped weights), `tour_peak_at` the page open at the peak, `tour_page_peaks_mb`
  each page's peak, `tour_exceptions` pages that showed an exception.

Both start fresh processes and need a quiet machine to be meaningful (memory is less noisy
than time, but another visitor's work would be counted).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from bench.browser import CHROMIUM, FLAGS, settle

ROOT = Path(__file__).resolve().parents[1]
NEEDS_MODEL = False            # bench/__main__.py: do not load the model into this process
PORT = 8616
MB = 1e6


_PREPARE = ("import runpy, sys; sys.argv = ['bundled_model']; runpy.run_module('lib.model.bundled_model', run_name='__main__'); "
            "print('VmHWM', [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])")


def prepare_peak() -> dict:
    """Peak resident memory of preparing the bundled model in a fresh process, empty cache.
    The peak is the child's own VmHWM (kB), read at its end: ru_maxrss would also count the
    parent's memory, which a forked child holds for an instant before exec."""
    with tempfile.TemporaryDirectory(prefix="llm-lab-empty-cache-") as cache:
        env = dict(os.environ, LLM_LAB_CACHE=cache, PYTHONPATH=str(ROOT))
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _PREPARE], cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"preparation failed: {done.stderr[-500:]!r}")
        kb = int(done.stdout.split("VmHWM")[-1].split()[0])          # the child prints "VmHWM <kB>"
        return {"prepare_peak_rss_mb": round(kb * 1024 / MB), "prepare_empty_cache_s": round(time.perf_counter() - t0, 1)}


class TreeSampler(threading.Thread):
    """Samples RSS and PSS summed over a process and all its descendants."""

    def __init__(self, pid: int, every: float = 0.1):
        super().__init__(daemon=True)
        import psutil

        self.root, self.every, self.stop_flag = psutil.Process(pid), every, threading.Event()
        self.label, self.peak_rss, self.peak_pss, self.peak_at = "start", 0, 0, ""
        self.page_peaks: dict[str, int] = {}

    def sample(self) -> tuple[int, int]:
        import psutil

        rss = pss = 0
        for p in [self.root] + self.root.children(recursive=True):
            try:
                info = p.memory_full_info()
                rss, pss = rss + info.rss, pss + getattr(info, "pss", info.rss)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                pass
        return rss, pss

    def run(self) -> None:
        while not self.stop_flag.is_set():
            rss, pss = self.sample()
            label = self.label
            self.page_peaks[label] = max(self.page_peaks.get(label, 0), rss)
            if rss > self.peak_rss:
                self.peak_rss, self.peak_at = rss, label
            self.peak_pss = max(self.peak_pss, pss)
            time.sleep(self.every)


def tour_peak(port: int = PORT) -> dict:
    """One visitor through every page in English then Indonesian on a fresh server."""
    from playwright.sync_api import sync_playwright

    from lib.concepts.catalog import CONCEPTS

    slugs = [""] + [c.slug for c in CONCEPTS if c.exists]
    # A fresh server as after a deploy: no persisted results (every page computes, while the
    # background pre-computation runs beside the visitor, as it would).
    results = tempfile.TemporaryDirectory(prefix="llm-lab-tour-results-")
    env = dict(os.environ, PYTHONPATH=str(ROOT), LLM_LAB_RESULTS=results.name)
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port",
                               str(port), "--server.headless", "true"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sampler = TreeSampler(server.pid)
    sampler.start()
    exceptions, t0 = [], time.perf_counter()
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("streamlit did not start")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            for lang in ("en", "id"):
                for slug in slugs:
                    sampler.label = f"{slug or 'home'}?lang={lang}"
                    page = browser.new_page(viewport={"width": 1400, "height": 2000})
                    page.set_default_timeout(600_000)          # a slow first render is measured, not skipped
                    t1 = time.perf_counter()
                    try:
                        page.goto(f"{url}/{slug}?lang={lang}", wait_until="domcontentloaded")
                        settle(page, 600)
                        if page.locator("[data-testid='stException']").count():
                            exceptions.append(sampler.label)
                    except Exception as e:  # noqa: BLE001 - a slow page is recorded, the tour goes on
                        exceptions.append(f"{sampler.label}: {type(e).__name__}")
                    finally:
                        page.close()
                    print(f"[hosting] {sampler.label}: {time.perf_counter() - t1:.1f} s, peak so far "
                          f"{sampler.peak_rss / MB:.0f} MB", file=sys.stderr, flush=True)
            browser.close()
        sampler.label = "end"
        time.sleep(1.0)
    finally:
        sampler.stop_flag.set()
        sampler.join()
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        results.cleanup()
    return {"tour_peak_rss_mb": round(sampler.peak_rss / MB), "tour_peak_pss_mb": round(sampler.peak_pss / MB),
            "tour_peak_at": sampler.peak_at, "tour_seconds": round(time.perf_counter() - t0),
            "tour_exceptions": exceptions,
            "tour_page_peaks_mb": {k: round(v / MB) for k, v in sampler.page_peaks.items()}}


def measure(model=None) -> dict:
    out = prepare_peak()
    out.update(tour_peak())
    return out


if __name__ == "__main__":
    import json

    sys.path.insert(0, str(ROOT))
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    res = prepare_peak() if which == "prepare" else tour_peak() if which == "tour" else measure()
    print(json.dumps(res))
