"""What the store hands out: plain frozen values, never ORM rows (no session attached)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping


@dataclass(frozen=True)
class RoomKeys:
    """A new room: `code` goes to the students (join link ?room=CODE), `secret` only to the
    lecturer (presenter link ?room=CODE&key=SECRET). The secret is not stored anywhere: lose it
    and the room can only expire."""
    code: str
    secret: str


@dataclass(frozen=True)
class RoomView:
    """A room as a student sees it.

    slug/params: the page the lecturer projects and its query params (slug None before the first
    move). version: bumped by every set_page/reveal/reset, so a poller redraws only on change.
    reveals: (question, phase) -> the model's answer recorded when it was revealed."""
    code: str
    lang: str
    slug: str | None
    params: Mapping[str, str]
    version: int
    reveals: Mapping[tuple[str, str], str] = field(default_factory=dict)

    @property
    def revealed(self) -> frozenset[str]:
        """Question ids revealed in the live phase."""
        return frozenset(q for (q, phase) in self.reveals if phase == "live")

    def is_revealed(self, question: str, phase: str = "live") -> bool:
        return (question, phase) in self.reveals

    def correct(self, question: str, phase: str = "live") -> str | None:
        """The model's answer recorded at the reveal, or None before it."""
        return self.reveals.get((question, phase))
