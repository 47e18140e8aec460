"""The speculative-speed page's live checks.

- Tokens per target call against Leviathan's formula with alpha HELD OUT: each (draft, gamma)
  run is predicted from the acceptance measured on the same draft's runs at the other gammas,
  within 3 standard errors (the calls' spread and alpha's own uncertainty); no run may miss.
- Sampled runs (T > 0): the tokens each block emitted against the acceptance rule's expectation
  given its proposals' min(1, p/q) (at T = 0 p and q are one-hot and this would compare a count
  with itself, so it is not shown there).
- Greedy runs (T = 0): speculative output identical to plain decoding (a separate loop).

`page_checks(cells_by_draft, temperature, n_new, t)` -> list[CheckResult]."""
from __future__ import annotations

from lib.concepts.check_result import CheckResult
from lib.concepts.speculative_speed.timed_runs import Cell, held_out_band

BAND_Z = 3.0             # standard errors around the held-out prediction
RULE_SD = 4.0            # sampled runs: tokens within this many standard deviations of the expectation


def page_checks(cells_by_draft: dict[str, list[Cell]], temperature: float, n_new: int, t) -> list[CheckResult]:
    bands = []
    for cells in cells_by_draft.values():
        for c in cells:
            alpha, pred, half, held = held_out_band(c, [o for o in cells if o is not c], BAND_Z)
            bands.append((c, alpha, pred, half, held))
    inside = sum(abs(c.tokens_per_call - pred) <= half for c, _, pred, half, _ in bands)
    worst = max(bands, key=lambda b: abs(b[0].tokens_per_call - b[2]) / b[3])
    c, alpha, pred, half, held = worst
    out = [CheckResult(t("check_formula", z=BAND_Z), inside == len(bands),
                       t("check_formula_detail" if held else "check_formula_detail_own", ok=inside, n=len(bands),
                         d=c.draft, g=c.gamma, m=c.tokens_per_call, p=pred, h=half, a=alpha, calls=c.target_calls), reference=t("ref_formula"))]
    all_cells = [c for cells in cells_by_draft.values() for c in cells]
    if temperature > 0:
        z = max(abs(c.tokens - c.expected_tokens) / max(c.expected_sd, 1e-9) for c in all_cells)
        out.append(CheckResult(t("check_exact_rule"),
                               all(abs(c.tokens - c.expected_tokens) <= RULE_SD * c.expected_sd + 1e-6 for c in all_cells),
                               t("check_exact_rule_detail", n=len(all_cells), z=min(z, 1e9), k=RULE_SD,
                                 tok=sum(c.tokens for c in all_cells), exp=sum(c.expected_tokens for c in all_cells)), reference=t("ref_exact_rule")))
    else:
        out.append(CheckResult(t("check_identical"), all(c.identical for c in all_cells),
                               t("check_identical_detail", ok=sum(c.identical for c in all_cells), n=len(all_cells),
                                 tok=n_new), reference=t("ref_identical")))
    return out
