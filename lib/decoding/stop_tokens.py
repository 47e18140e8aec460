"""Which token ids end a hypothesis: the model's EOS plus optional stop tokens.

A base model rarely emits EOS in the middle of ordinary text, so with EOS alone almost every
beam runs to max_new_tokens and all finished hypotheses have the same length (then length
normalization cannot change anything). Passing extra end tokens — transformers'
`generate(eos_token_id=[...])` — ends hypotheses at a line end or a sentence end instead.
"""
from __future__ import annotations

STOP_KINDS = ("newline", "sentence")
_TEXTS = {"newline": ("\n", "\n\n"), "sentence": (".", "?", "!")}


def stop_token_ids(tokenizer, kinds) -> tuple[int, ...]:
    """Ids of the single tokens that spell each chosen kind (texts that are not one token in
    this tokenizer are skipped)."""
    out = []
    for kind in kinds:
        for text in _TEXTS[kind]:
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(ids) == 1:
                out.append(int(ids[0]))
    return tuple(sorted(set(out)))


def end_token_ids(tokenizer, eos_ids, kinds) -> tuple[int, ...]:
    """EOS ids plus the chosen stop tokens, sorted and without duplicates."""
    return tuple(sorted(set(int(e) for e in eos_ids) | set(stop_token_ids(tokenizer, kinds))))
