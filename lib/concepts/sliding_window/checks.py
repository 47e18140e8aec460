"""The sliding-window page's live checks, with named tolerances.

`page_checks(zero, par, ring, fit, W, parity_window, parity_tokens, t)` -> list[CheckResult]:
  zero  policy_checks.evicted_attention (every layer windowed at W, the fact prompt)
  par   policy_checks.eviction_matches_mask (an evicting cache vs the mask, small and quick)
  ring  ring_check.ring_matches_dense (the model's own window, a real ring buffer vs dense)
  fit   fact_distance.Agreement (layouts where the whole prompt fits inside W), or None
  layer_ref  model_check's LayerCheck of the first local layer on the ring check's tokens (past
        the model's window) against transformers' layer, or None (not the bundled model)
Proofs: zero (against the window written in closed form), the ring's bytes and layer_ref; the
others compare the engine with itself.
`t(key, **fmt)` is the page's text lookup (tests may pass a stub)."""
from __future__ import annotations

from lib.concepts.model_check.checks import LAYER_REL_TOL
from lib.concepts.check_result import CONSISTENCY, CheckResult

ROW_SUM_TOL = 1e-4       # attention rows still sum to 1 after the evicted keys got weight 0
EVICT_REL_TOL = 1e-5     # evicting cache vs mask: max |Δ hidden| relative to max |hidden|
RING_REL_TOL = 1e-4      # ring cache vs dense cache: max |Δ logit| relative to max |logit| (other chunking)
SAME_TOL = 1e-6          # p(answer) of the three layouts when the whole prompt fits inside W


def page_checks(zero, par, ring, fit, W: int, parity_window: int, parity_tokens: int, spec, bpe: int,
                t, layer_ref=None) -> list[CheckResult]:
    out = [
        CheckResult(t("check_zero", w=W, n=zero.n_tokens),
                    zero.pairs > 0 and zero.max_weight == 0.0 and zero.inside_zero == 0 and zero.row_sum_err < ROW_SUM_TOL,
                    t("check_zero_detail", pairs=zero.pairs, mx=zero.max_weight, inside=zero.inside_zero,
                      sum_err=zero.row_sum_err, tol=ROW_SUM_TOL), reference=t("ref_zero")),
        CheckResult(t("check_evict", w=parity_window, n=parity_tokens), par.rel_diff <= EVICT_REL_TOL,
                    t("check_evict_detail", n=parity_tokens, d=par.max_diff, s=par.scale, r=par.rel_diff,
                      tol=EVICT_REL_TOL, held=par.held, full=par.full), reference=t("ref_evict"), kind=CONSISTENCY),
    ]
    if ring is not None:    # the model has sliding-window layers of its own
        out += [
            CheckResult(t("check_ring", w=ring.window, n=ring.n), ring.rel_diff <= RING_REL_TOL,
                        t("check_ring_detail", m=ring.compared, d=ring.max_diff, r=ring.rel_diff, tol=RING_REL_TOL), reference=t("ref_ring"), kind=CONSISTENCY),
            CheckResult(t("check_bytes", kv=spec.n_kv_heads, hd=spec.head_dim, b=bpe, c=ring.chunk, w=ring.window),
                        ring.ring_bytes == ring.formula_bytes and ring.ring_bytes < ring.dense_bytes,
                        t("check_bytes_detail", measured=ring.ring_bytes, formula=ring.formula_bytes,
                          dense=ring.dense_bytes, n=ring.n), reference=t("ref_bytes")),
        ]
    if layer_ref is not None:
        out.append(CheckResult(t("check_layer_ref", w=layer_ref.window, l=layer_ref.layer, n=layer_ref.tokens),
                               layer_ref.rel <= LAYER_REL_TOL,
                               t("check_layer_ref_detail", d=layer_ref.max_diff, r=layer_ref.rel, tol=LAYER_REL_TOL),
                               reference=t("ref_layer_ref")))
    if fit is not None and fit.last_fit is not None:
        out.append(CheckResult(t("check_same", d=fit.last_fit, n=fit.fit_tokens, w=W), fit.fit_spread <= SAME_TOL,
                               t("check_same_detail", diff=fit.fit_spread, tol=SAME_TOL), reference=t("ref_same"), kind=CONSISTENCY))
    return out
