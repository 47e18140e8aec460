"""The attention-scaling page's live checks. Each compares our code with something independent:
the sampled variance with d, the ENGINE's own attention weights (float32, its own code path,
run at the chosen scale through `rescale_hook`) with our float64 q.k recomputation, and the
entropy limit at scale 0 with log2 of the number of visible keys (counted from the mask).

`page_checks(dv, at_model, at_chosen, t)` -> list[CheckResult]: `at_model` / `at_chosen` are
`layer_scores` of the same prompt and layer at the model's scale and at the chosen one."""
from __future__ import annotations

import numpy as np
import torch

from lib.concepts.attention_scaling import attention_scaling as scaling
from lib.concepts.check_result import CheckResult

VAR_REL_TOL = 0.05          # |Var(q.k) / d - 1| for 20,000 samples (sampling error ~1% at most)
ENGINE_TOL = 1e-5           # max |engine weights - softmax(q.k * scale)| (float32 vs float64)
ORDER_MARGIN = 1e-4         # scaled score gaps below this are float32 near-ties, not an order
ENTROPY_TOL = 1e-9          # bits: entropy at scale 0 vs log2(visible keys); rises with the scale
MONO_SCALES = tuple(2.0 ** np.arange(-10, 5, 1.0))


def page_checks(dv, at_model, at_chosen, t) -> list[CheckResult]:
    rel = np.abs(dv.var_raw / dv.dims - 1.0)
    runs = (at_model, at_chosen) if at_chosen.model_scale != at_model.model_scale else (at_model,)
    inversions = sum(scaling.order_inversions(r.dots, r.engine_probs, r.model_scale, ORDER_MARGIN) for r in runs)
    pairs = int(at_model.allowed.sum(-1).pow(2).sum()) * len(runs)
    eng = max(float((scaling.scaled_probs(r.dots, r.model_scale).float() - r.engine_probs).abs().max()) for r in runs)
    ents = torch.stack([scaling.row_entropy_bits(scaling.scaled_probs(at_model.dots, s))
                        for s in (0.0,) + MONO_SCALES])                           # (n, H, T)
    rise = float((ents[1:] - ents[:-1]).max())
    uniform = torch.log2(at_model.allowed.sum(-1).double())                      # (H, T)
    limit_gap = float((ents[0] - uniform).abs().max())
    return [
        CheckResult(t("check_var", dims=", ".join(t.num(int(d), ",") if hasattr(t, "num") else str(int(d))
                                                     for d in dv.dims)),
                    bool(rel.max() <= VAR_REL_TOL),
                    t("check_var_detail", d=int(dv.dims[-1]), v=float(dv.var_raw[-1]), worst=100 * float(rel.max()),
                      n=dv.n_samples, tol=100 * VAR_REL_TOL), reference=t("ref_var")),
        CheckResult(t("check_engine", s=at_chosen.model_scale, s0=at_model.model_scale), eng <= ENGINE_TOL,
                    t("check_engine_detail", d=eng, tol=ENGINE_TOL), reference=t("ref_engine")),
        CheckResult(t("check_order", l=at_model.layer, s=at_chosen.model_scale, s0=at_model.model_scale),
                    inversions == 0, t("check_order_detail", worst=inversions, pairs=pairs, m=ORDER_MARGIN), reference=t("ref_order")),
        CheckResult(t("check_entropy"), rise <= ENTROPY_TOL and limit_gap <= ENTROPY_TOL,
                    t("check_entropy_detail", rise=rise, n=len(MONO_SCALES) + 1, gap=limit_gap), reference=t("ref_entropy")),
    ]
