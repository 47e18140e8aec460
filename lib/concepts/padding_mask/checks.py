"""The padding-mask page's live checks: the padded batch against each prompt run alone (an
independent computation with no padding at all), the packed row likewise, the unmasked batch
against the masked one, and the measured time of the same real tokens in a larger padded shape.

`page_checks(cmp, tm, lengths, t)` -> list[CheckResult]; `t(key, **fmt)` is the page's text
lookup (tests may pass a stub that returns the key)."""
from __future__ import annotations

from lib.concepts.check_result import CONSISTENCY, CheckResult
from lib.concepts.padding_mask.padding import MaskComparison, Timings, time_ratio

EQUAL_TOL = 1e-3          # max |Δ hidden| and |Δ logit| accepted as float rounding
NOMASK_MIN_DIFF = 1e-2    # without the mask, left padding must move hidden states more than this
TIME_MIN_RATIO = 1.2      # the most-padded batch must take at least this much longer
BUSY_LOAD = 1.5           # load average per core above this: other programs share the cores (ours is ~1 per core)
NOISY_SPREAD = 0.5        # a compared run's repeats differ by more than half their median


def time_verdict(tm: Timings, held: bool) -> bool | None:
    """The timing check's verdict (issue 32 item 5): a pass stands; a failure measured on a
    busy machine (load average per core > BUSY_LOAD) or with repeats that disagree (spread of
    either compared run > NOISY_SPREAD of its median) is NOT JUDGED (None): on a shared
    machine correct code can time badly."""
    if held:
        return True
    pads = [i for i, lab in enumerate(tm.labels) if lab.startswith("padded:")]
    spread = max((tm.slowest[i] - tm.fastest[i]) / max(tm.seconds[i], 1e-12) for i in (pads[0], pads[-1]))
    busy = tm.load_avg / max(tm.cpus, 1) > BUSY_LOAD
    return None if busy or spread > NOISY_SPREAD else False


def nomask_changes(cmp: MaskComparison) -> dict[str, bool]:
    """{side: whether running that side's padding without a mask changed the outputs}."""
    return {v.side: v.max_hidden_diff > NOMASK_MIN_DIFF for v in cmp.variants if v.mode == "no_mask"}


def page_checks(cmp: MaskComparison, tm: Timings, lengths: tuple[int, ...], t) -> list[CheckResult]:
    """The four checks of the page, in the page's language."""
    B = len(lengths)
    masked = [v for v in cmp.variants if v.mode == "mask"]
    worst_h = max(v.max_hidden_diff for v in masked)
    worst_l = max(v.max_logit_diff for v in masked)
    left_nomask = next(v for v in cmp.variants if v.side == "left" and v.mode == "no_mask")
    padded = min(lengths) < max(lengths)
    if padded:
        nomask = CheckResult(t("check_nomask"), left_nomask.max_hidden_diff > NOMASK_MIN_DIFF,
                             t("check_nomask_detail", h=left_nomask.max_hidden_diff, tol=NOMASK_MIN_DIFF), reference=t("ref_nomask"), kind=CONSISTENCY)
    else:   # equal lengths: there is no padding the mask could hide, so both runs must agree
        nomask = CheckResult(t("check_nopad"), left_nomask.max_hidden_diff <= EQUAL_TOL,
                             t("check_nopad_detail", h=left_nomask.max_hidden_diff, tol=EQUAL_TOL), reference=t("ref_nomask"), kind=CONSISTENCY)
    tr, pr = time_ratio(tm)
    verdict = time_verdict(tm, tr > TIME_MIN_RATIO)
    return [
        CheckResult(t("check_equal", B=B),
                    worst_h <= EQUAL_TOL and worst_l <= EQUAL_TOL and all(v.top1_changed == 0 for v in masked),
                    t("check_equal_detail", h=worst_h, l=worst_l, tol=EQUAL_TOL), reference=t("ref_equal"), kind=CONSISTENCY),
        CheckResult(t("check_packed"), cmp.packed_hidden_diff <= EQUAL_TOL and cmp.packed_logit_diff <= EQUAL_TOL,
                    t("check_packed_detail", h=cmp.packed_hidden_diff, l=cmp.packed_logit_diff, tol=EQUAL_TOL), reference=t("ref_packed"), kind=CONSISTENCY),
        nomask,
        CheckResult(t("check_time"), verdict,
                    t("check_time_detail", tr=tr, pr=pr, n=sum(lengths), r=tm.repeats, load=tm.load_avg,
                      min=TIME_MIN_RATIO) if verdict is not None else
                    t("busy_detail", load=tm.load_avg, c=tm.cpus, tr=tr, min=TIME_MIN_RATIO, r=tm.repeats),
                    reference=t("ref_time")),
    ]
