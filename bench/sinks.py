"""Benchmark keys for the attention-sinks page: one streaming evaluation, cold.

sinks_eval_s: 4 sinks + 60 recent (cache positions, the StreamingLLM setting), masked chunks of
128, over the first 2,000 tokens of the long text, on CPU. Target <= 60 s."""
from __future__ import annotations

import time

from lib.core.cache import policy as cp
from lib.model.long_text import long_text
from lib.decoding.streaming_eval import evaluate

TOKENS = 2000


def measure(model) -> dict:
    ids = tuple(model.tokenizer(long_text(), add_special_tokens=True)["input_ids"][:TOKENS])
    policy = cp.sinks(4, 60, reassign=True)
    t0 = time.perf_counter()
    r = evaluate(model.engine, ids, policy, 128)
    return {"sinks_eval_s": time.perf_counter() - t0, "sinks_eval_tokens": len(ids),
            "sinks_eval_policy": policy.label, "sinks_eval_ppl": r.perplexity()}
