"""A live numerical check: what was tested, whether it held, and the numbers behind it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckResult:
    name: str       # what was checked (already in the page's language)
    passed: bool
    detail: str     # the measured numbers, e.g. "max |Δp| = 3.0e-08 (tolerance 1e-6)"
