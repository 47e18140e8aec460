"""The map of the app: every concept page, its stable URL slug and its group.

Slugs are part of the product (teachers share links): never rename one. Each page file is
named exactly like its slug (see lib/ui/boot.py). A concept whose page file does not exist
yet is listed on the home page but not registered."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PAGES_DIR = Path(__file__).resolve().parents[1] / "pages"

GROUPS = ("decoding", "speculative", "attention", "serving", "quantization")


@dataclass(frozen=True)
class Concept:
    number: int
    slug: str
    group: str
    icon: str

    @property
    def page_file(self) -> Path:
        return PAGES_DIR / f"{self.slug}.py"

    @property
    def exists(self) -> bool:
        return self.page_file.exists()


CONCEPTS = (
    Concept(1, "temperature", "decoding", "🌡️"),
    Concept(2, "top-k-top-p", "decoding", "✂️"),
    Concept(3, "stable-softmax", "decoding", "🧮"),
    Concept(4, "logit-bias", "decoding", "⚖️"),
    Concept(5, "beam-search", "decoding", "🌳"),
    Concept(6, "speculative-acceptance", "speculative", "🎲"),
    Concept(7, "speculative-speed", "speculative", "⏱️"),
    Concept(8, "attention-scaling", "attention", "📏"),
    Concept(9, "gqa", "attention", "👥"),
    Concept(10, "padding-mask", "attention", "🧱"),
    Concept(11, "rope-shift", "attention", "🔄"),
    Concept(12, "sliding-window", "serving", "🪟"),
    Concept(13, "attention-sinks", "serving", "⚓"),
    Concept(14, "prefix-caching", "serving", "🔗"),
    Concept(15, "paged-attention", "serving", "📄"),
    Concept(16, "chunked-prefill", "serving", "🧩"),
    Concept(17, "kv-quantization", "quantization", "🗜️"),
    Concept(18, "activation-outliers", "quantization", "📈"),
    Concept(19, "model-memory", "quantization", "💾"),
)


def by_slug(slug: str) -> Concept:
    return next(c for c in CONCEPTS if c.slug == slug)
