"""sampling_step_ms: one full pass of the sampling pipeline (bias -> temperature -> top-k ->
top-p -> min-p -> sample) over a real 262,144-token next-token distribution, on the CPU."""
from __future__ import annotations

import statistics

import torch

from bench.common import run_times
from lib.decoding.generate import next_token_logits
from lib.decoding.sampling import SamplingConfig, run_pipeline, sample_next
from lib.model.tokens import encode_prompt

PROMPT = "Once upon a time, in a small village by the sea,"
CFG = SamplingConfig(0.8, top_k=50, top_p=0.9, min_p=0.05, bias=((9079, -float("inf")), (506, 1.5)))


def measure(model) -> dict:
    logits = next_token_logits(model.engine, encode_prompt(model.tokenizer, PROMPT).ids)   # (V,) CPU
    gen = torch.Generator().manual_seed(0)

    def step():
        return sample_next(run_pipeline(logits, CFG).probs, gen)

    times = run_times(step, repeat=30, warmup=3)
    return {"sampling_step_ms": round(1000 * statistics.median(times), 3),
            "sampling_step_min_ms": round(1000 * min(times), 3),    # the floor, useful on a busy machine
            "sampling_vocab": int(logits.shape[-1])}
