"""Speculative decoding on the GPU machine (called by bench.gpu_check; random weights of the
real config, so acceptance says nothing about text — the *costs* are what is measured).

Greedy, against plain decoding on the same engine, with two drafts: prompt lookup on a
prompt that repeats a 24-token pattern (acceptance depends on the random model), and an
"oracle" draft that proposes the target's own greedy continuation (acceptance 1: the upper
bound, which isolates what block verification costs on this GPU). Reports acceptance, tokens
per target call, wall-clock speedup, and whether the output equals plain greedy decoding."""
from __future__ import annotations

import time

import torch

from lib.decoding.speculative.drafts import PromptLookupDraft
from lib.model.from_transformers import engine_from_hf
from lib.decoding.sampling import SamplingConfig
from lib.decoding.speculative.speculative_decode import plain_decode, speculative_generate


class OracleDraft(PromptLookupDraft):
    """Proposes the known greedy continuation: every proposal is accepted (upper bound)."""

    def __init__(self, vocab: int, prompt_len: int, continuation: list[int]):
        super().__init__(vocab, name="oracle")
        self.prompt_len, self.continuation = prompt_len, continuation

    def lookup(self, context, gamma):
        done = len(context) - self.prompt_len
        return self.continuation[done:done + gamma]


def measure(hf, device, new_tokens: int = 96) -> dict:
    eng = engine_from_hf(hf)
    g = torch.Generator().manual_seed(5)
    pattern = torch.randint(0, hf.config.vocab_size, (24,), generator=g).tolist()
    prompt = pattern * 6
    greedy = SamplingConfig(0.0)
    plain_decode(eng, prompt, 8, greedy)                      # warm-up
    plain = min((plain_decode(eng, prompt, new_tokens, greedy) for _ in range(3)), key=lambda r: r.wall_s)
    out = {"gpu_spec_plain_tok_s": len(plain.new_ids) / plain.wall_s}
    drafts = {"lookup": lambda: PromptLookupDraft(hf.config.vocab_size),
              "oracle": lambda: OracleDraft(hf.config.vocab_size, len(prompt), plain.new_ids)}
    for (name, make), gamma in [(d, g) for d in drafts.items() for g in (2, 4, 8)]:
        runs = []
        for _ in range(3):
            torch.cuda.synchronize() if device.type == "cuda" else None
            t0 = time.perf_counter()
            run = speculative_generate(eng, make(), prompt, new_tokens, gamma, greedy)
            runs.append((time.perf_counter() - t0, run))
        best = min(runs, key=lambda r: r[1].wall_s)[1]
        out[f"gpu_spec_{name}_g{gamma}"] = {
            "acceptance": best.accepted / max(best.proposed, 1),
            "tokens_per_call": best.tokens_per_call,
            "speedup": (len(best.new_ids) / best.wall_s) / out["gpu_spec_plain_tok_s"],
            "same_as_plain_greedy": best.new_ids == plain.new_ids[:len(best.new_ids)],
        }
    return out
