"""The map of the app: every concept page, its stable URL slug and its group.

Slugs are part of the product (teachers share links): never rename one. Each page file is
named exactly like its slug (see lib/ui/boot.py). A concept whose page file does not exist
yet is listed on the home page but not registered."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PAGES_DIR = Path(__file__).resolve().parents[2] / "pages"

GROUPS = ("decoding", "speculative", "attention", "serving", "quantization")

# The home page's map of concepts: three columns of groups, read column by column (and stacked
# in this order on a phone). They keep GROUPS' order, so the concepts' numbers read 1..N down
# the page, as in the sidebar (issue 33: quantization 17-19 used to sit between 11 and 12).
HOME_COLUMNS = (("decoding",), ("speculative", "attention"), ("serving", "quantization"))


@dataclass(frozen=True)
class Concept:
    number: int
    slug: str
    group: str
    icon: str
    # The page's own experiment is declared long (CONCEPTS.md: first render may exceed 3 s;
    # then it shows progress, caches its results and says how long this run took).
    long: bool = False
    # URL queries the server also computes in the background, after every page's default state:
    # states whose answer is a fresh measuring process (model-memory's prefill probe, one per
    # batch and prompt length). A class that moves those controls then starts no process, and
    # a student's change answers from the results, which say when they were measured.
    background: tuple[str, ...] = ()

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
    Concept(5, "beam-search", "decoding", "🌳", long=True),          # + transformers' beam search, live
    Concept(6, "speculative-acceptance", "speculative", "🎲", long=True),  # every layer's draft, Monte Carlo
    Concept(7, "speculative-speed", "speculative", "⏱️", long=True),  # wall-clock timing of every draft
    Concept(8, "attention-scaling", "attention", "📏"),
    Concept(9, "gqa", "attention", "👥"),
    Concept(10, "padding-mask", "attention", "🧱", long=True),         # timed padded batches
    Concept(11, "rope-shift", "attention", "🔄"),
    Concept(12, "sliding-window", "serving", "🪟", long=True),         # a fact at several distances
    Concept(13, "attention-sinks", "serving", "⚓", long=True),        # a long text under every policy
    Concept(14, "prefix-caching", "serving", "🔗", long=True),         # timed reuse vs recompute
    Concept(15, "paged-attention", "serving", "📄", long=True),        # paged vs contiguous generation
    Concept(16, "chunked-prefill", "serving", "🧩", long=True),        # measured prefill/decode costs
    Concept(17, "kv-quantization", "quantization", "🗜️", long=True),   # every cache format, generated
    Concept(18, "activation-outliers", "quantization", "📈", long=True),  # quantized activations injected
    Concept(19, "model-memory", "quantization", "💾", long=True,       # memory measured in subprocesses
            background=tuple(f"batch={b}&prefill={n}" for b in (1, 2, 3, 4) for n in (64, 128, 256)
                             if (b, n) != (1, 128))),                  # the probe's grid but its default
)


def by_slug(slug: str) -> Concept:
    return next(c for c in CONCEPTS if c.slug == slug)


def home_order() -> list[Concept]:
    """The concepts in the order the home page's map shows them (HOME_COLUMNS)."""
    return [x for groups in HOME_COLUMNS for g in groups for x in CONCEPTS if x.group == g]
