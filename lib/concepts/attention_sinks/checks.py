"""The attention-sinks page's live checks, with named tolerances.

`page_checks(par, par_policy, mass, rec, dense, W, t, name)` -> list[CheckResult]:
  par         policy_checks.masked_matches_evicting on a short text (the cache that really
              evicts, one token at a time, against the fast masked evaluation)
  par_policy  the sinks policy it ran (its budget S + R is checked against the entries the
              evicting cache actually held)
  mass        attention_mass.sink_mass (dense forward, the model's own layout)
  rec, dense  streaming_eval results of window-with-recompute and dense, or None
`t(key, **fmt)` is the page's text lookup; `name(policy)` its display name."""
from __future__ import annotations

import numpy as np

from lib.concepts.check_result import CONSISTENCY, CheckResult

PARITY_TOL = 1e-3        # nats: masked vs evicting NLL on the same text
SINK_FACTOR = 5.0        # a layer "sinks" if its first positions get >= 5x their even share
SINK_LAYERS_MIN = 0.5    # ... in at least half of the layers
RECOMPUTE_TOL = 1e-3     # nats: recompute equals dense while the window still holds the whole prefix


def sink_layers(mass) -> int:
    """Layers whose heads put, on average, >= SINK_FACTOR x the even share on the first positions."""
    share = mass.per_head.mean(1)                                               # (L,)
    return int((share >= SINK_FACTOR * mass.uniform).sum())


def page_checks(par, par_policy, mass, rec, dense, W: int, t, name) -> list[CheckResult]:
    L = mass.per_head.shape[0]
    hit = sink_layers(mass)
    budget = par_policy.sinks + par_policy.window
    out = [
        CheckResult(t("check_parity", name=name(par_policy), n=par.n + 1), par.max_diff <= PARITY_TOL,
                    t("check_parity_detail", d=par.max_diff, n=par.n, ev=par.after, tol=PARITY_TOL), reference=t("ref_parity"), kind=CONSISTENCY),
        CheckResult(t("check_held", s=par_policy.sinks, r=par_policy.window), par.held == budget,
                    t("check_held_detail", held=par.held, budget=budget, n=par.n + 1), reference=t("ref_held")),
        CheckResult(t("check_sinks"), hit >= SINK_LAYERS_MIN * L,
                    t("check_sinks_detail", hit=hit, L=L, k=mass.first, f=SINK_FACTOR), reference=t("ref_sinks")),
    ]
    if rec is not None and dense is not None:
        head = rec.positions[rec.positions < W]
        d_rec = float(np.abs(rec.nll[:len(head)] - dense.nll[head]).max()) if len(head) else 0.0
        out.append(CheckResult(t("check_recompute"), d_rec <= RECOMPUTE_TOL,
                               t("check_recompute_detail", d=d_rec, n=len(head), tol=RECOMPUTE_TOL), reference=t("ref_recompute"), kind=CONSISTENCY))
    return out
