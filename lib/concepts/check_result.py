"""A live numerical check: what was tested, whether it held, the numbers behind it, and what
it was compared against.

Contract (issue 32): every check names its `reference` — the computation it compares the app
with, in the page's language (e.g. "transformers `Gemma3DecoderLayer`", "`gguf` dequantize",
"χ² against the distribution", "closed form") — and its `kind`:
- `PROOF`: the reference shares no code with what it checks (a bug in the app turns it red);
- `CONSISTENCY`: the app compared with itself (two of its own paths agree); the panel labels it
  so, and it is never presented as a proof.
`passed` is True (held), False (failed) or None: NOT JUDGED, for a timing check whose
measurements were too noisy to judge (the machine was busy); its detail says why (n runs,
spread), and it is shown as neither a pass nor a failure (`verdict`).
The defaults keep old three-argument constructions working; tests/unit/test_check_references.py
fails on any page check whose `reference` is still empty."""
from __future__ import annotations

from dataclasses import dataclass

PROOF = "proof"
CONSISTENCY = "consistency"
KINDS = (PROOF, CONSISTENCY)


@dataclass(frozen=True)
class CheckResult:
    name: str            # what was checked (already in the page's language)
    passed: bool | None  # None = not judged (timing too noisy on a busy machine)
    detail: str          # the measured numbers, e.g. "max |Δp| = 3.0e-08 (tolerance 1e-6)"
    reference: str = ""  # what it is compared against (page's language); "" = not yet named
    kind: str = PROOF    # PROOF (independent reference) or CONSISTENCY (the app against itself)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"CheckResult.kind must be one of {KINDS}, not {self.kind!r}")

    @property
    def verdict(self) -> str:
        """"pass", "fail" or "not_judged" (the key of its word in assets/text/common.toml)."""
        return "not_judged" if self.passed is None else "pass" if self.passed else "fail"


ICONS = {"pass": "✅", "fail": "❌", "not_judged": "⚪"}
