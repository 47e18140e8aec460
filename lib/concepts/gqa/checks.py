"""The gqa page's live checks. Each one compares our code with something independent of it:
transformers' eager attention (its own `repeat_kv`), the engine's own attention output, the
bytes of storage the caches really allocated, and the data (the heads' maps). (A check that
MHA's cache is n_heads / n_kv_heads times this model's was dropped: once the bytes check holds
for both caches the ratio follows from the formula, so it could not fail on its own.)

`page_checks(hm, measured, n_heads, n_kv_heads, t)` -> list[CheckResult]; `t(key, **fmt)` is the
page's text lookup (tests pass a stub)."""
from __future__ import annotations

import numpy as np

from lib.concepts.check_result import CheckResult
from lib.concepts.gqa.gqa import CacheBytesCheck, HeadMaps

HF_TOL = 1e-6            # max |gqa_attention - transformers eager| on head outputs (fp32)
ENGINE_TOL = 1e-6        # max |o_proj(gqa_attention) - the engine's attn_out|
DIFFER_MIN_TV = 1e-3     # heads of one group must differ by more than this (mean TV per row)


def page_checks(hm: HeadMaps, measured: CacheBytesCheck, n_heads: int, n_kv_heads: int, t) -> list[CheckResult]:
    H = len(hm.head_distance)
    off = hm.head_distance[~np.eye(H, dtype=bool)] if H > 1 else np.zeros(1)
    bytes_ok = all(r[2] == r[3] for r in measured.rows)
    return [
        CheckResult(t("check_equal", l=hm.layer),
                    hm.gqa_vs_mha_exact and hm.hf_diff <= HF_TOL and hm.engine_diff <= ENGINE_TOL,
                    t("check_equal_detail", exact=t("yes") if hm.gqa_vs_mha_exact else t("no"), hf=hm.hf_diff,
                      d=hm.engine_diff, tol=HF_TOL), reference=t("ref_equal")),
        CheckResult(t("check_differ"), bool(off.max() > DIFFER_MIN_TV),
                    t("check_differ_detail", lo=float(off.min()), hi=float(off.max()), tol=DIFFER_MIN_TV), reference=t("ref_differ")),
        CheckResult(t("check_bytes"), bytes_ok,
                    t("check_bytes_detail", T=measured.tokens,
                      rows="; ".join(t("bytes_row", name=r[0], f=r[2], a=r[3]) for r in measured.rows)), reference=t("ref_bytes")),
    ]
