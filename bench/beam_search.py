"""Beam search timing: this app's beam search on the engine vs transformers' generate.

Keys: beam_search_s (ours: 4 beams, 24 new tokens, CPU, median), hf_beam_search_s
(transformers' generate, same search on its own copy of the bundled model),
beam_search_same_output (same best sequence)."""
from __future__ import annotations

import torch

from bench.common import median_time
from lib.concepts.beam_search.beam_search import beam_search, select

PROMPT = "The capital of France is"
NUM_BEAMS, MAX_NEW, ALPHA = 4, 24, 1.0


def measure(model) -> dict:
    from transformers import AutoModelForCausalLM

    from lib.model import bundled_model

    ids = tuple(model.tokenizer(PROMPT)["input_ids"])
    eos = tuple(model.spec.eos_ids)

    def ours():
        rec = beam_search(model.engine, ids, NUM_BEAMS, MAX_NEW, ALPHA, False, eos)
        return rec.hypotheses[select(rec, ALPHA, False).best].tokens

    hf = AutoModelForCausalLM.from_pretrained(bundled_model.prepare(), dtype=torch.float32).eval()

    def theirs():
        with torch.no_grad():
            out = hf.generate(torch.tensor([ids]), num_beams=NUM_BEAMS, length_penalty=ALPHA, early_stopping=False,
                              max_new_tokens=MAX_NEW, do_sample=False, eos_token_id=list(eos), pad_token_id=0)
        return tuple(out[0, len(ids):].tolist())

    same = ours() == theirs()
    return {"beam_search_s": median_time(ours, repeat=3, warmup=0),
            "hf_beam_search_s": median_time(theirs, repeat=3, warmup=0),
            "beam_search_same_output": bool(same)}
