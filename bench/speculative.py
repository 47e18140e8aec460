"""Speculative decoding benchmark (issue 5): greedy, the easy and the hard workload.

For each workload plain greedy decoding and every candidate (draft, gamma) are timed with
lib.core.timing.measure (alone, `REPEATS` times, medians, whole runs with prefill); the best
measured candidate is reported. Keys: spec_alpha, spec_tokens_per_call, spec_speedup (easy workload),
spec_hard_alpha, spec_hard_tokens_per_call, spec_hard_speedup, plus the winning draft/gamma.
"""
from __future__ import annotations

from lib.decoding.speculative.drafts import frequent_tokens
from lib.model.long_text import long_text
from lib.concepts.speculative_speed.speculative_speed import PRESETS
from lib.concepts.speculative_speed.timed_runs import run_gamma, time_plain

N_NEW = 32
REPEATS = 3
CANDIDATES = ((("lookup", 3), 2), (("lookup", 3), 4), (("lookup", 3), 6), (("early_small", 6), 2))


def measure(model) -> dict:
    out: dict = {}
    eng, tok = model.engine, model.tokenizer
    for name, prefix in (("easy", "spec"), ("hard", "spec_hard")):
        ids = tuple(tok(PRESETS[name])["input_ids"])
        subset = frequent_tokens(tok, [long_text()], ids)
        plain = time_plain(eng, ids, N_NEW, 0.0, 0, (), REPEATS)
        cells = [run_gamma(eng, ids, (d,), g, N_NEW, 0.0, 0, subset, (), plain, REPEATS)[0] for d, g in CANDIDATES]
        best = max(cells, key=lambda c: c.speedup)
        out.update({f"{prefix}_alpha": best.alpha, f"{prefix}_tokens_per_call": best.tokens_per_call,
                    f"{prefix}_speedup": best.speedup, f"{prefix}_draft": f"{best.draft}, gamma={best.gamma}",
                    f"{prefix}_identical": all(c.identical for c in cells)})
    return out
