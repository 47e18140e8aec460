"""A simulated schedule (lib.concepts.chunked_prefill.scheduler_sim.SimResult) told step by
step in words. `t(key, **fmt)` is the page's text lookup (keys step_decode, step_prefill,
step_first, step_idle)."""
from __future__ import annotations


def step_sentences(result, prompt_lens: dict[str, int], t) -> list[str]:
    """One sentence per scheduler step: who decoded, which prompt tokens were prefilled, and
    whose first token came out."""
    done: dict[str, int] = {}
    out = []
    for i, s in enumerate(result.steps):
        parts = []
        if s.decode_rids:
            parts.append(t("step_decode", n=len(s.decode_rids), rids=", ".join(s.decode_rids)))
        if s.prefill_rid is not None:
            a = done.get(s.prefill_rid, 0)
            b = a + s.prefill_tokens
            done[s.prefill_rid] = b
            parts.append(t("step_prefill", rid=s.prefill_rid, a=a + 1, b=b, L=prompt_lens[s.prefill_rid]))
            if b == prompt_lens[s.prefill_rid]:
                parts.append(t("step_first", rid=s.prefill_rid, ttft=result.ttft_s[s.prefill_rid] * 1000))
        out.append(t("step_head", i=i, a=s.start_s * 1000, b=s.end_s * 1000, d=(s.end_s - s.start_s) * 1000)
                   + " " + (" ".join(parts) or t("step_idle")))
    return out
