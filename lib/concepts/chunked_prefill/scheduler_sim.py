"""A step-by-step serving scheduler simulation: running decodes plus arriving long prompts,
with or without chunked prefill. Each step's duration comes from `StepCosts` measured with the
engine on this machine (lib.concepts.chunked_prefill.chunked_prefill.measure_costs).

One scheduler step (iteration-level scheduling, as in Orca / vLLM / Sarathi-Serve):
  - every request that is decoding gets one new token;
  - the oldest request still in prefill gets `chunk` more prompt tokens
    (chunk = None: its whole remaining prompt at once — the naive mix);
  - duration = decode(batch) + prefill(chunk tokens), run back to back on one device.
A decoding request emits a token at the end of each step it is in; a prompt's first token
comes at the end of the step that finishes its prefill (time to first token, TTFT). The
gaps between one request's tokens are its time between tokens (TBT).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lib.concepts.chunked_prefill.chunked_prefill import StepCosts


@dataclass(frozen=True)
class SimRequest:
    rid: str
    arrival_s: float
    prompt_len: int       # 0 = already prefilled: decoding from t = arrival
    max_new: int


@dataclass
class Step:
    start_s: float
    end_s: float
    decode_rids: list[str]
    prefill_rid: str | None
    prefill_tokens: int


@dataclass
class SimResult:
    steps: list[Step]
    token_times: dict[str, list[float]] = field(default_factory=dict)
    ttft_s: dict[str, float] = field(default_factory=dict)     # only requests that had a prompt

    def tbt_s(self) -> np.ndarray:
        """Every gap between consecutive tokens of every request (seconds)."""
        gaps = [np.diff(t) for t in self.token_times.values() if len(t) > 1]
        return np.concatenate(gaps) if gaps else np.zeros(0)


def simulate(requests: list[SimRequest], costs: StepCosts, chunk: int | None) -> SimResult:
    """Run the scheduler until every request has produced max_new tokens."""
    if chunk is not None and chunk < 1:
        raise ValueError("chunk must be >= 1 or None")
    reqs = sorted(requests, key=lambda r: (r.arrival_s, r.rid))
    left = {r.rid: r.prompt_len for r in reqs}           # prompt tokens still to prefill
    out = SimResult([], {r.rid: [] for r in reqs})
    t = 0.0
    while any(len(out.token_times[r.rid]) < r.max_new for r in reqs):
        arrived = [r for r in reqs if r.arrival_s <= t + 1e-12]
        decoding = [r for r in arrived if left[r.rid] == 0 and len(out.token_times[r.rid]) < r.max_new]
        waiting = [r for r in arrived if left[r.rid] > 0]
        if not decoding and not waiting:
            t = min(r.arrival_s for r in reqs if r.arrival_s > t)
            continue
        pre = waiting[0] if waiting else None
        n_pre = 0 if pre is None else (left[pre.rid] if chunk is None else min(chunk, left[pre.rid]))
        end = t + costs.decode(len(decoding)) + costs.prefill(n_pre)
        for r in decoding:
            out.token_times[r.rid].append(end)
        if pre is not None:
            left[pre.rid] -= n_pre
            if left[pre.rid] == 0:                       # prefill done: its first token
                out.token_times[pre.rid].append(end)
                out.ttft_s[pre.rid] = end - pre.arrival_s
        out.steps.append(Step(t, end, [r.rid for r in decoding], pre.rid if pre else None, n_pre))
        t = end
    return out


def scenario(costs: StepCosts, n_running: int, prompt_len: int, n_arrivals: int = 3,
             running_tokens: int = 48, new_tokens: int = 8) -> list[SimRequest]:
    """`n_running` requests already decoding from t = 0 and `n_arrivals` prompts of
    `prompt_len` tokens arriving every 12 measured decode steps (first after 4 steps)."""
    step = costs.decode(n_running)
    reqs = [SimRequest(f"run{i + 1}", 0.0, 0, running_tokens) for i in range(n_running)]
    reqs += [SimRequest(f"new{j + 1}", (4 + 12 * j) * step, prompt_len, new_tokens) for j in range(n_arrivals)]
    return reqs


@dataclass
class SweepRow:
    chunk: int | None
    tbt_p50_s: float
    tbt_p99_s: float
    tbt_max_s: float
    ttft_mean_s: float
    total_s: float


def sweep_chunks(requests: list[SimRequest], costs: StepCosts, chunks) -> list[SweepRow]:
    """TBT percentiles and mean TTFT for each chunk size (None = no chunking)."""
    rows = []
    for c in chunks:
        res = simulate(requests, costs, c)
        tbt = res.tbt_s()
        rows.append(SweepRow(c, float(np.percentile(tbt, 50)), float(np.percentile(tbt, 99)), float(tbt.max()),
                             float(np.mean(list(res.ttft_s.values()))) if res.ttft_s else 0.0, res.steps[-1].end_s))
    return rows
