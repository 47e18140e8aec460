"""Text <-> token ids for the pages: encoding with a cap, and readable token strings."""
from __future__ import annotations

from dataclasses import dataclass

MAX_PROMPT_TOKENS = 512  # pages may ask for fewer; longer prompts are truncated with a note


@dataclass(frozen=True)
class Prompt:
    text: str
    ids: tuple[int, ...]         # includes BOS when the tokenizer adds one
    truncated_from: int | None   # original token count when truncated, else None

    @property
    def n_tokens(self) -> int:
        return len(self.ids)


class EmptyPrompt(ValueError):
    """Raised for a prompt that is empty or only whitespace."""


def encode_prompt(tokenizer, text: str, max_tokens: int = MAX_PROMPT_TOKENS) -> Prompt:
    """Encode `text` (BOS added as the model expects). Keeps the *first* `max_tokens` tokens."""
    if text is None or not text.strip():
        raise EmptyPrompt("empty prompt")
    ids = tokenizer(text, add_special_tokens=True)["input_ids"]
    if len(ids) > max_tokens:
        return Prompt(text, tuple(ids[:max_tokens]), len(ids))
    return Prompt(text, tuple(ids), None)


def token_text(tokenizer, token_id: int) -> str:
    """One token as text, with leading spaces and newlines made visible (␣, ⏎)."""
    s = tokenizer.decode([int(token_id)])
    if s == "":
        s = tokenizer.convert_ids_to_tokens(int(token_id)) or f"<{token_id}>"
    return s.replace(" ", "␣").replace("\n", "⏎")


def token_texts(tokenizer, ids) -> list[str]:
    return [token_text(tokenizer, i) for i in ids]
