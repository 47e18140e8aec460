"""The prefix-caching page's live checks, with named tolerances.

`page_checks(res, sh0, sh, lcp, n_new, bs, t)` -> list[CheckResult]:
  res   prefix_cache.reuse_vs_recompute (paged pool with block hits vs a full recompute)
  sh0   prefix_cache.reuse_at_shifted_positions at shift 0 (ordinary reuse)
  sh    the same at the page's shift (reuse at the wrong positions)
  lcp   longest common token prefix of the two prompts (computed on the ids, independently
        of the block manager), n_new the new prompt's length, bs the block size
`t(key, **fmt)` is the page's text lookup (tests may pass a stub)."""
from __future__ import annotations

from lib.concepts.check_result import CONSISTENCY, CheckResult

EQUAL_TOL = 1e-4       # max |Δ logit| of reuse vs recompute (float rounding of another kernel order)
SHIFT_MIN = 1e-2       # reuse at shifted positions must move some logit more than this


def expected_reuse(lcp: int, n_new: int, bs: int) -> int:
    """Tokens a block cache can reuse: whole blocks inside the common prefix, never the block
    that holds the last token (its logits must be computed)."""
    return min(lcp // bs, (n_new - 1) // bs) * bs


def page_checks(res, sh0, sh, lcp: int, n_new: int, bs: int, t) -> list[CheckResult]:
    return [
        CheckResult(t("check_equal"), res.max_abs_diff <= EQUAL_TOL and res.argmax_equal,
                    t("check_equal_detail", k=res.n_reused, n=res.n_tokens, d=res.max_abs_diff, tol=EQUAL_TOL,
                      same=t("yes") if res.argmax_equal else t("no")), reference=t("ref_equal"), kind=CONSISTENCY),
        CheckResult(t("check_blocks"), res.n_reused == expected_reuse(lcp, n_new, bs),
                    t("check_blocks_detail", lcp=lcp, bs=bs, k=res.n_reused, e=expected_reuse(lcp, n_new, bs)), reference=t("ref_blocks")),
        CheckResult(t("check_shift0"), sh0.max_abs_diff <= EQUAL_TOL,
                    t("check_shift_detail", k=sh0.n_reuse, shift=0, d=sh0.max_abs_diff, tol=EQUAL_TOL), reference=t("ref_shift0"), kind=CONSISTENCY),
        CheckResult(t("check_shift", shift=sh.shift), sh.max_abs_diff > SHIFT_MIN,
                    t("check_shift_detail_min", k=sh.n_reuse, shift=sh.shift, d=sh.max_abs_diff, tol=SHIFT_MIN), reference=t("ref_shift"), kind=CONSISTENCY),
    ]


def chain_check(A: list[int], B: list[int], bs: int, t) -> CheckResult:
    """The page's claim that a block's hash names its WHOLE prefix (chained through the previous
    block), judged against the token ids themselves: for the two requests, block k's hashes
    are equal exactly when the first k blocks' tokens are equal; and B with only its first token
    changed gets a different hash for EVERY block, later blocks equal to B's included (a hash
    of a block's own tokens alone would keep them). Needs B to have 2 full blocks to see that."""
    from lib.core.cache.block_manager import block_hashes

    ha, hb = block_hashes(A, bs), block_hashes(B, bs)
    agree = all((ha[k] == hb[k]) == (A[:(k + 1) * bs] == B[:(k + 1) * bs]) for k in range(min(len(ha), len(hb))))
    B2 = [B[0] + 1] + B[1:]                       # only the first token differs
    kept = sum(x == y for x, y in zip(block_hashes(B2, bs), hb))
    if len(hb) < 2:
        return CheckResult(t("check_chain"), agree, t("check_chain_short", n=len(B), bs=bs), reference=t("ref_chain"))
    return CheckResult(t("check_chain"), agree and kept == 0,
                       t("check_chain_detail", n=len(hb), kept=kept, same=t("yes") if agree else t("no")),
                       reference=t("ref_chain"))
