"""batching_ratio: 8 concurrent generations with 8 different prompts, batched by the engine's
scheduler (lib/decoding/batching.py) vs the same 8 run one after another, same process, side
by side (sequential, batched, sequential, batched; the faster of each pair kept). Also
whether every generation's tokens equal its run alone.

    python -m bench --only batching          (or: python -m bench.batching [rounds] [new tokens])
"""
from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor

from lib.decoding import batching
from lib.decoding.generate import generate
from lib.decoding.sampling import SamplingConfig
from lib.model.tokens import encode_prompt

PROMPTS = ["The capital of France is", "Once upon a time, in a small village by the sea,",
           "def fibonacci(n):", "Ibu kota Indonesia adalah", "The three laws of thermodynamics are",
           "My favourite recipe for bread starts with", "In 1969, the first humans", "To be, or not to be,"]
CONFIGS = [SamplingConfig(0.0), SamplingConfig(0.8, top_p=0.9)] * 4
N_NEW = 16


def measure(model, rounds: int = 2, n_new: int = N_NEW) -> dict:
    jobs = [(encode_prompt(model.tokenizer, p).ids, cfg, seed) for seed, (p, cfg) in enumerate(zip(PROMPTS, CONFIGS))]

    def one(job):
        ids, cfg, seed = job
        return generate(model.engine, ids, cfg, seed, n_new)

    one(jobs[0])                                            # warm-up
    sched = batching.scheduler_for(model.engine)
    seq_s, bat_s, alone, together, steps, rows = [], [], None, None, 0, 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        alone = [one(j) for j in jobs]
        seq_s.append(time.perf_counter() - t0)
        print(f"[batching] one after another: {seq_s[-1]:.1f} s", file=sys.stderr, flush=True)
        s0, r0 = sched.steps, sched.rows
        t0 = time.perf_counter()
        with ThreadPoolExecutor(len(jobs)) as pool:
            together = list(pool.map(one, jobs))
        bat_s.append(time.perf_counter() - t0)
        print(f"[batching] batched: {bat_s[-1]:.1f} s", file=sys.stderr, flush=True)
        steps, rows = sched.steps - s0, sched.rows - r0
    n_tokens = sum(len(t) for t in alone)
    return {"batching_sessions": len(jobs), "batching_new_tokens": n_tokens,
            "batching_sequential_tok_s": round(n_tokens / min(seq_s), 2),
            "batching_batched_tok_s": round(n_tokens / min(bat_s), 2),
            "batching_ratio": round(min(seq_s) / min(bat_s), 2),
            "batching_rows_per_forward": round(rows / max(steps, 1), 2),
            "batching_same_tokens": together == alone}


if __name__ == "__main__":
    import json

    from lib.model import model_loader

    rounds, n_new = (int(a) for a in (sys.argv[1:] + ["2", str(N_NEW)])[:2])
    print(json.dumps(measure(model_loader.load("bundled", "cpu"), rounds, n_new)))
