"""One step of a recorded beam search, told in words: which running beams were expanded,
which of the K candidates were kept, which finished, which were pruned (for the step-through)."""
from __future__ import annotations

from dataclasses import dataclass

from lib.concepts.beam_search.beam_search import FINISHED, KEPT, BeamRecord


@dataclass(frozen=True)
class StepEvent:
    rank: int            # 1-based rank of the candidate by Σ log p at this step
    prefix: tuple[int, ...]   # generated tokens of the beam it extends
    token: int
    logprob: float
    cum_logprob: float
    fate: str            # KEPT, FINISHED, PRUNED
    ends: bool           # its token is an end token (else a FINISHED one was cut at the token limit)


def path_tokens(record: BeamRecord, node: int) -> tuple[int, ...]:
    """The generated tokens from the prompt to candidate `node` (inclusive); () for -1."""
    out = []
    while node >= 0:
        out.append(record.candidates[node].token)
        node = record.candidates[node].parent
    return tuple(reversed(out))


def step_events(record: BeamRecord, step: int) -> list[StepEvent]:
    """The K candidates of 0-based `step`, best first."""
    if not 0 <= step < record.n_steps:
        raise ValueError(f"step must be in [0, {record.n_steps}), got {step}")
    return [StepEvent(c.rank + 1, path_tokens(record, c.parent), c.token, c.logprob, c.cum_logprob, c.fate, c.ends)
            for c in record.candidates if c.step == step]


def running_beams(record: BeamRecord, step: int) -> int:
    """How many running beams were expanded at `step` (1 at the first step: the prompt)."""
    return 1 if step == 0 else sum(1 for c in record.candidates if c.step == step - 1 and c.fate == KEPT)


def finished_by(record: BeamRecord, step: int) -> int:
    """Finished hypotheses recorded up to and including `step`."""
    return sum(1 for c in record.candidates if c.step <= step and c.fate == FINISHED)


def clip_words(text: str, limit: int, keep: str = "end") -> str:
    """`text` shortened to about `limit` characters at a word boundary, with "…" where it was
    cut: keep="end" keeps the last words ("…cities in the world"), keep="start" the first
    ("The capital of…"). A single word longer than `limit` is cut inside it (still with "…").
    Never cuts inside a word otherwise (the step list once showed "autiful cities…")."""
    if len(text) <= limit:
        return text
    if keep == "end":
        tail = text[-limit:]
        if not text[-limit - 1].isspace():                      # the cut fell inside a word
            gap = next((i for i, ch in enumerate(tail) if ch.isspace()), None)
            tail = tail[gap:] if gap is not None else tail
        return "…" + tail.lstrip()
    head = text[:limit]
    if not text[limit].isspace():
        gap = next((i for i in range(len(head) - 1, -1, -1) if head[i].isspace()), None)
        head = head[:gap] if gap else head
    return head.rstrip() + "…"
