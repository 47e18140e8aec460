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


def chunking_cost(a_s: float, decode_s: float, prompt_len: int, chunk: int) -> dict:
    """What splitting a `prompt_len`-token prompt into chunks of `chunk` adds before its first
    token, on the page's measured line (a forward costs a_s + b_s per token; the b_s part is
    paid once however the prompt is split): ceil(L / chunk) chunks are that many forwards
    instead of one, so chunks - 1 EXTRA steps, each paying the fixed a_s and a decode step of
    the running batch (decode_s) again. Returns the numbers the page's sentence states, in ms:
    {k: chunks, extra_steps, a_ms, d_ms, step_ms = a_ms + d_ms, extra_ms = extra_steps * step_ms}.
    a_ms and d_ms are rounded to whole milliseconds (as the sentence writes them), so the
    product it states is exactly the product of the numbers it shows."""
    k = -(-int(prompt_len) // int(chunk))
    extra_steps = k - 1
    a_ms, d_ms = float(round(a_s * 1000)), float(round(decode_s * 1000))
    return {"k": k, "extra_steps": extra_steps, "a_ms": a_ms, "d_ms": d_ms, "step_ms": a_ms + d_ms,
            "extra_ms": extra_steps * (a_ms + d_ms)}
