"""batching_ratio: 8 concurrent generations with 8 different prompts, batched by the engine's
scheduler (lib/decoding/batching.py) vs the same 8 run one after another, same process, side
by side (sequential, batched, sequential, batched; the faster of each pair kept). Also
whether every generation's tokens equal its run alone. batching_step_ratio isolates the
engine: one decode step for 8 sessions in one forward vs one session's step, alternated, the
fastest of each kept: 8 x t(1) / t(8) tokens per second gained.

    python -m bench --only batching          (or: python -m bench.batching [rounds] [new tokens])
"""
from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor

import torch

from lib.decoding import batching
from lib.decoding.batching import batched_forward
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
    return {**step_ratio(model), "batching_sessions": len(jobs), "batching_new_tokens": n_tokens,
            "batching_sequential_tok_s": round(n_tokens / min(seq_s), 2),
            "batching_batched_tok_s": round(n_tokens / min(bat_s), 2),
            "batching_ratio": round(min(seq_s) / min(bat_s), 2),
            "batching_rows_per_forward": round(rows / max(steps, 1), 2),
            "batching_same_tokens": together == alone}


def step_ratio(model, repeats: int = 5) -> dict:
    eng = model.engine
    caches = []
    for p in PROMPTS:
        c = eng.new_cache(1, capacity=64)
        eng.forward(torch.tensor([encode_prompt(model.tokenizer, p).ids]), c)
        caches.append(c)
    token = torch.tensor([[506]])
    one, eight = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        eng.forward(token, caches[0])
        one.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        batched_forward(eng, [(token, c) for c in caches])
        eight.append(time.perf_counter() - t0)
    return {"batching_step_1_ms": round(1000 * min(one), 1), "batching_step_8_ms": round(1000 * min(eight), 1),
            "batching_step_ratio": round(len(PROMPTS) * min(one) / min(eight), 2)}


if __name__ == "__main__":
    import json

    from lib.model import model_loader

    rounds, n_new = (int(a) for a in (sys.argv[1:] + ["2", str(N_NEW)])[:2])
    model = model_loader.load("bundled", "cpu")
    out = step_ratio(model)
    print(json.dumps(out), file=sys.stderr, flush=True)
    print(json.dumps({**out, **(measure(model, rounds, n_new) if rounds else {})}))
