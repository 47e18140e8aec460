"""The rope-shift page's live checks, with named tolerances.

`page_checks(jerr, out, hf_err, base_logits, layer, t)` -> list[CheckResult]:
  jerr      joint-shift error of real scores (rope_shift.joint_shift_error)
  out       rope_shift.shift_outcome at the page's Δ (recompute vs re-rotated vs relabelled)
  hf_err    (error, scale) of hf_rotation.hf_moved_key_error at the page's Δ
  base_logits  next-token logits (V,) of the whole prompt at positions 0..T-1
`t(key, **fmt)` is the page's text lookup (tests may pass a stub)."""
from __future__ import annotations

from lib.concepts.check_result import CONSISTENCY, CheckResult
from lib.concepts.rope_shift.rope_shift import ShiftOutcome

CHECK_DELTAS = (1, 7, 100, 1000, 4096)   # shifts the joint-invariance check tries
JOINT_TOL = 1e-3          # |score change| when q and k move together (float32 rotations)
KEY_REL_TOL = 5e-4        # re-rotated vs recomputed keys, relative to max |key|
HF_REL_TOL = 5e-4         # our moved keys vs transformers' rotation, relative to max |key|
RELABEL_MIN = 0.1         # relabelling without rotation must move some logit more than this
REROT_MAX = 0.01          # re-rotating must keep every logit within this of recomputing
MODEL_TOL = 0.01          # whole prompt at Δ.. vs at 0..: max |Δlogit|


def logit_diffs(out: ShiftOutcome) -> dict[str, float]:
    """max |logits − recomputed logits| of the re-rotated and the relabelled cache."""
    ref = out.logits["recompute"]
    return {k: float((out.logits[k] - ref).abs().max()) for k in ("rerotated", "relabelled")}


def page_checks(jerr: float, out: ShiftOutcome, hf_err: tuple[float, float], base_logits, layer: int,
                t) -> list[CheckResult]:
    d = out.delta
    base_diff = float((out.logits["recompute"] - base_logits).abs().max())   # same prompt, all positions + Δ
    krel = out.key_error["rerotated"] / out.key_scale
    hrel = hf_err[0] / hf_err[1]
    diffs = logit_diffs(out)
    return [
        CheckResult(t("check_joint", l=layer, n=len(CHECK_DELTAS), hi=CHECK_DELTAS[-1]), jerr <= JOINT_TOL,
                    t("check_joint_detail", e=jerr, tol=JOINT_TOL), reference=t("ref_joint")),
        CheckResult(t("check_rerot", d=d), krel <= KEY_REL_TOL,
                    t("check_rerot_detail", e=out.key_error["rerotated"], r=krel, tol=KEY_REL_TOL,
                      e2=out.key_error["relabelled"]), reference=t("ref_rerot"), kind=CONSISTENCY),
        CheckResult(t("check_hf", d=d), hrel <= HF_REL_TOL, t("check_hf_detail", e=hf_err[0], r=hrel, tol=HF_REL_TOL), reference=t("ref_hf")),
        CheckResult(t("check_relabel", d=d), diffs["relabelled"] > RELABEL_MIN and diffs["rerotated"] < REROT_MAX,
                    t("check_relabel_detail", dl=diffs["relabelled"], dr=diffs["rerotated"], lo=RELABEL_MIN,
                      hi=REROT_MAX), reference=t("ref_relabel"), kind=CONSISTENCY),
        CheckResult(t("check_model", d=d), base_diff < MODEL_TOL, t("check_model_detail", e=base_diff, tol=MODEL_TOL), reference=t("ref_model"), kind=CONSISTENCY),
    ]
