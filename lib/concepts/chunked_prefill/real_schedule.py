"""The scheduler run for real: requests decoding on the engine while a long prompt arrives,
prefilled in one piece or in chunks, every step timed. The simulation
(lib.concepts.chunked_prefill.scheduler_sim) predicts these steps from separately measured
costs; this module measures them, so the page can check the prediction and the claim.

One step (as in the simulation): every running request decodes one token (one batched
`decode_one_token`), then, once the prompt has arrived, the next `chunk` prompt tokens
(chunk = None: all of it) are a `prefill` into the new request's own cache (the decode
loop's own two steps, lib/decoding/generate.py). The step's wall time is the
gap between two tokens of every running request.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass

import torch

from lib.core.timing import exclusive
from lib.decoding.generate import decode_one_token, prefill


@dataclass
class RealRun:
    chunk: int | None
    step_s: list[float]             # measured wall time of every step
    prefill_tokens: list[int]       # prompt tokens processed in each step (0 = decode only)
    running_tokens: list[list[int]] # per step: the greedy token of each running request
    first_token: int                # the new request's first (greedy) token
    load_avg: float                 # 1-minute load average after the run
    others_cpu: float = 0.0         # share of the machine's cores OTHER processes used during the run (0..1)
    spread: float = 0.0             # median over steps of (max - min) / median of a step's repeats

    def max_step_s(self) -> float:
        return max(self.step_s)

    def decode_only_s(self) -> list[float]:
        return [s for s, n in zip(self.step_s, self.prefill_tokens) if n == 0]


def one_pass(engine, running, prompt, chunk, before, after, clock):
    """One timed pass of the schedule: (step seconds, prompt tokens per step, running tokens
    per step, the new request's first token). `running` = (the running requests' KV cache
    after their history, their next tokens (n, 1)); the pass decodes on a copy of that cache,
    so every pass starts from the same state without prefilling the history again."""
    cache, tok = running[0].clone(), running[1]
    prompt_len = prompt.shape[1]
    steps, pre, toks, first = [], [], [], -1
    new_cache = engine.new_cache(1, capacity=prompt_len + 8)
    done, tail = 0, 0
    while done < prompt_len or tail < after:
        t0 = clock()
        logits = decode_one_token(engine, tok, cache)                                     # (n, V)
        n_pre = 0
        if len(steps) >= before and done < prompt_len:
            n_pre = prompt_len - done if chunk is None else min(chunk, prompt_len - done)
            out, _ = prefill(engine, prompt[:, done:done + n_pre], new_cache)              # (1, V), continues at `done`
            done += n_pre
            if done == prompt_len:
                first = int(out[0].argmax())
        elif done == prompt_len:
            tail += 1
        tok = logits.argmax(-1, keepdim=True)                                             # (n, 1)
        steps.append(clock() - t0)
        pre.append(n_pre)
        toks.append(tok[:, 0].tolist())
    return steps, pre, toks, first


def run_schedule(engine, n_running: int, prompt_len: int, chunk: int | None, before: int = 2,
                 after: int = 1, context: int = 64, seed: int = 0, clock=time.perf_counter,
                 repeats: int = 3) -> RealRun:
    """`n_running` requests (a `context`-token history each) decode greedily; a prompt of
    `prompt_len` tokens arrives after `before` steps and is prefilled `chunk` tokens per step;
    `after` decode-only steps follow. One policy of `run_schedules`."""
    return run_schedules(engine, n_running, prompt_len, (chunk,), before, after, context, seed, clock, repeats)[0]


def run_schedules(engine, n_running: int, prompt_len: int, chunks: tuple, before: int = 2,
                  after: int = 1, context: int = 64, seed: int = 0, clock=time.perf_counter,
                  repeats: int = 3, _progress=None) -> list[RealRun]:
    """The schedule of `run_schedule` once per prefill policy in `chunks` (None = the whole
    prompt in one step), on the same requests. Token ids are random but fixed by `seed`.

    Timing: every policy runs `repeats` times and each step's time is its median over the
    repeats (one pass can catch a pause of the machine). The passes are interleaved (pass 1 of
    every policy, then pass 2, ...), so a slow spell of the machine falls on all the policies
    alike instead of on whichever was measured then. The whole run holds the measurement lock
    (lib.core.timing.exclusive): no other model work meanwhile. `_progress(done, total)` is
    called after every pass (outside the cache key: runtime.cached ignores callables)."""
    if any(c is not None and c < 1 for c in chunks):
        raise ValueError("chunk must be >= 1 or None")
    g = torch.Generator().manual_seed(seed)
    hi = min(1000, engine.spec.vocab)
    ctx = torch.randint(0, hi, (n_running, context), generator=g).to(engine.device)       # (n, C)
    prompt = torch.randint(0, hi, (1, prompt_len), generator=g).to(engine.device)         # (1, L)
    passes = [[] for _ in chunks]                     # passes[i][r]: pass r of policy chunks[i]
    with exclusive():
        history = engine.new_cache(n_running, capacity=context + before + after + prompt_len + 8)
        running = history, prefill(engine, ctx, history)[0].argmax(-1, keepdim=True)     # cache, (n, 1)
        start = cpu_snapshot()
        total = max(1, repeats) * len(chunks)
        for r in range(max(1, repeats)):
            for i, chunk in enumerate(chunks):
                passes[i].append(one_pass(engine, running, prompt, chunk, before, after, clock))
                if _progress is not None:
                    _progress(r * len(chunks) + i + 1, total)
        others = others_share(start, cpu_snapshot())
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    runs = []
    for chunk, runs_of_policy in zip(chunks, passes):
        _, pre, toks, first = runs_of_policy[0]
        per_step = [[p[0][i] for p in runs_of_policy] for i in range(len(pre))]
        step_s = [statistics.median(x) for x in per_step]
        spread = statistics.median((max(x) - min(x)) / statistics.median(x) for x in per_step)
        runs.append(RealRun(chunk, step_s, pre, toks, first, load, others, spread))
    return runs


def cpu_snapshot():
    """(wall clock, the machine's CPU times, this process's CPU times), for others_share."""
    import psutil

    return time.perf_counter(), psutil.cpu_times(), psutil.Process().cpu_times()


def others_share(before, after) -> float:
    """The share of the machine's cores that OTHER processes kept busy between two snapshots
    (0 = none, 1 = every core all the time): the load a timing ran under, measured during it
    rather than averaged over the last minute as the load average is."""
    import psutil

    def busy(c):
        return c.user + c.nice + c.system + sum(getattr(c, f, 0.0) for f in ("irq", "softirq", "steal"))

    wall = after[0] - before[0]
    own = (after[2].user + after[2].system) - (before[2].user + before[2].system)
    other = busy(after[1]) - busy(before[1]) - own
    return max(0.0, other / (wall * (psutil.cpu_count() or 1))) if wall > 0 else 0.0


def predicted_steps(costs, n_running: int, prompt_len: int, chunk: int | None, before: int = 2):
    """The simulation of the same schedule: (prompt tokens per step, predicted seconds per
    step) for the steps up to the one that finishes the prefill."""
    from lib.concepts.chunked_prefill.scheduler_sim import SimRequest, simulate

    d = costs.decode(n_running)
    reqs = [SimRequest(f"run{i + 1}", 0.0, 0, before + prompt_len + 1) for i in range(n_running)]
    reqs.append(SimRequest("new", before * d, prompt_len, 1))
    steps, total = [], 0
    for s in simulate(reqs, costs, chunk).steps:
        steps.append(s)
        total += s.prefill_tokens
        if total >= prompt_len:
            break
    return [s.prefill_tokens for s in steps], [s.end_s - s.start_s for s in steps]
