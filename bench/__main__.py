"""python -m bench [--baseline] [--only core,topic,...]
python -m bench --classroom [--port 8621] [--settle 90] [--cold]   (bench/classroom.py: 30 sessions)
python -m bench --live-class [--port 8610] [--sessions 200] [--no-restart]   (bench/live_class.py)
python -m bench --explore [--port 8631] [--sessions 30] [--reuse-results] [--pages slug,...]   (bench/explore.py)

Core keys (issue 2): load_cold_s, prepare_cold_s, load_warm_s, decode_tok_s, hf_decode_tok_s,
decode_speedup, bandwidth_bound_tok_s, decode_fraction_of_bound, logits_max_abs_diff,
peak_rss_mb, page_first_render_s. --baseline adds hf_gguf_load_s (stock transformers GGUF
load). Topic modules in bench/ add their own keys. Timings are medians of repeated runs,
measured side by side in this process; the last line of output is the JSON object.
"""
from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", action="store_true", help="also time the stock transformers GGUF load")
    ap.add_argument("--only", default="", help="comma-separated: core and/or topic module names")
    ap.add_argument("--skip-cold", action="store_true", help="skip the cold preparation (slow, writes 1 GB)")
    ap.add_argument("--classroom", action="store_true", help="only the classroom load test (bench/classroom.py)")
    ap.add_argument("--port", type=int, default=8621, help="--classroom: the fresh server's port")
    ap.add_argument("--settle", type=float, default=90.0, help="--classroom: seconds to wait after the health check")
    ap.add_argument("--sessions", type=int, default=30, help="--classroom: concurrent sessions per scenario")
    ap.add_argument("--cold", action="store_true", help="--classroom: an empty results folder (no persisted results)")
    ap.add_argument("--live-class", action="store_true", help="only the live class benchmark (bench/live_class.py)")
    ap.add_argument("--no-restart", action="store_true", help="--live-class: skip the kill-and-restart scenario")
    ap.add_argument("--explore", action="store_true", help="only the interactive exploration benchmark (bench/explore.py)")
    ap.add_argument("--reuse-results", action="store_true", help="--explore: keep the cache folder's results (default: empty)")
    ap.add_argument("--pages", default="", help="--explore: only these page slugs (comma-separated)")
    ap.add_argument("--no-prewarm", action="store_true", help="--explore: no background pre-computation (a quick look)")
    ap.add_argument("--class-only", action="store_true",
                    help="--explore: only the thirty-at-once scenario (no one-visitor sweep, no comparison alone)")
    a = ap.parse_args()
    if a.explore:
        from bench import explore

        out = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(["python -m bench"] + sys.argv[1:])}
        out.update(explore.run(a.port if "--port" in sys.argv else 8631, a.sessions, a.reuse_results, a.pages,
                               prewarm=not a.no_prewarm, class_only=a.class_only))
        print(json.dumps(out, default=float))
        return
    if a.live_class:
        from bench import live_class

        out = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(["python -m bench"] + sys.argv[1:])}
        port = a.port if "--port" in sys.argv else 8610
        students = a.sessions if "--sessions" in sys.argv else 200
        out.update(live_class.run(port, students, restart=not a.no_restart))
        print(json.dumps(out, default=float))
        return
    if a.classroom:
        from bench import classroom

        out = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(["python -m bench"] + sys.argv[1:])}
        out.update(classroom.run(a.port, a.settle, a.sessions, a.cold))
        print(json.dumps(out, default=float))
        return
    only = set(filter(None, a.only.split(",")))
    from bench import core

    out: dict = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(["python -m bench"] + sys.argv[1:])}
    if not only or "core" in only:
        out.update(core.measure_all(baseline=a.baseline, cold=not a.skip_cold))
    topics = [m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])
              if m.name not in ("core", "__main__", "common", "classroom", "browser", "live_class", "live_student",
                                "explore", "visitor") and not m.name.startswith("gpu")]
    model = None
    for name in sorted(topics):
        if only and name not in only:
            continue
        mod = importlib.import_module(f"bench.{name}")
        if model is None and getattr(mod, "NEEDS_MODEL", True):
            from lib.model import model_loader

            model = model_loader.load("bundled", "cpu")
        print(f"[bench] {name}…", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            out.update(mod.measure(model))
        except Exception as e:  # noqa: BLE001 - one broken topic must not hide the others
            out[f"{name}_error"] = f"{type(e).__name__}: {e}"
        print(f"[bench] {name} done in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    print(json.dumps(out, default=float))


if __name__ == "__main__":
    main()
