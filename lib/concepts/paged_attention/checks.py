"""The paged-attention page's live checks, computed from one `PagedRun` (no Streamlit).

Each check compares the paged run with something computed independently of the code it
tests: the engine's contiguous KVCache (logits), the block-size rule (waste), the allocator's
own bookkeeping rebuilt from the block tables (invariants), the prompt length (where the one
copy-on-write must happen), and the earlier snapshots (which blocks were freed before reuse).
"""
from __future__ import annotations

from lib.concepts.check_result import CONSISTENCY, CheckResult

LOGIT_TOL = 1e-3          # max |paged logit - contiguous logit| (float32, different gather order)


def worst_unused(run) -> int:
    """Most reserved-but-empty slots any sequence held at any step."""
    return max((len(tab) * run.block_size - s.lengths[q] for s in run.snapshots for q, tab in s.tables.items()),
               default=0)


def expected_copies(prompt_len: int, block_size: int, n_samples: int = 2) -> int:
    """Copy-on-write copies a forked request causes: its samples share the prompt's last,
    partly filled block; every sample but the last one to write into it gets a private copy
    (any write into a shared block copies it). A prompt that fills its blocks exactly leaves
    nothing shared to write into."""
    return (n_samples - 1) if prompt_len % block_size else 0


def waits_and_reuse(run, requests) -> tuple[list[str], set[int]]:
    """Requests admitted after their arrival step, and the blocks they received that a
    finished sequence had returned to the free list earlier in the run."""
    freed_before, waited, reused = set(), [], set()
    for prev, cur in zip(run.snapshots, run.snapshots[1:]):
        freed_before |= {x for q, tab in prev.tables.items() if q not in cur.tables for x in tab}
        for r in requests:
            seqs = [q for q in cur.tables if q.split(".")[0] == r.rid and q not in prev.tables]
            if seqs and cur.step > r.arrival_step:
                waited.append(r.rid)
                reused |= {x for q in seqs for x in cur.tables[q]} & freed_before
    return waited, reused


def page_checks(run, requests, prompt_len: int, t, batch=None) -> list[CheckResult]:
    """The page's checks; `t(key, **fmt)` gives the texts (tests may pass a stub). batch:
    lib.reference.batch_reference.batched_vs_alone of the requests' prompts (continuous
    batching of the same prompts against the engine alone, a consistency check), or None."""
    bs = run.block_size
    worst = worst_unused(run)
    shared = sum(1 for s in run.snapshots for r in s.ref_counts if r > 1)
    want = expected_copies(prompt_len, bs, max(len(r.samples) for r in requests))
    waited, reused = waits_and_reuse(run, requests)
    return [
        CheckResult(t("check_equal"), run.max_abs_diff <= LOGIT_TOL and run.argmax_equal and run.n_checked > 0,
                    t("check_equal_detail", n=run.n_checked, k=len(run.tokens), d=run.max_abs_diff,
                      tol=LOGIT_TOL, same=t("yes") if run.argmax_equal else t("no")), reference=t("ref_equal")),
        CheckResult(t("check_waste", bs=bs), worst < bs,
                    t("check_waste_detail", w=worst, steps=len(run.snapshots)), reference=t("ref_waste")),
        CheckResult(t("check_invariants"), not run.invariant_errors,
                    t("check_invariants_detail", steps=len(run.snapshots), e=len(run.invariant_errors),
                      first=(run.invariant_errors or ["—"])[0]), reference=t("ref_invariants")),
        CheckResult(t("check_cow"), len(run.cow_copies) == want,
                    t("check_cow_detail", p=prompt_len, bs=bs, c=len(run.cow_copies), w=want, sh=shared), reference=t("ref_cow")),
        CheckResult(t("check_reuse"), bool(reused) if waited else True,
                    t("check_reuse_detail", w=", ".join(waited) or "—", r=len(reused)) if waited
                    else t("check_reuse_none"), reference=t("ref_reuse")),
    ] + ([] if batch is None else [batch_check(batch, t)])


def batch_check(batch, t) -> CheckResult:
    """Continuous batching of the page's prompts against each prompt alone (consistency)."""
    return CheckResult(t("check_batched"), batch.max_abs_diff <= LOGIT_TOL and batch.argmax_equal,
                       t("check_batched_detail", n=batch.n_prompts, lens=", ".join(str(x) for x in batch.lengths),
                         d=batch.max_abs_diff, tol=LOGIT_TOL, same=t("yes") if batch.argmax_equal else t("no")),
                       reference=t("ref_batched"), kind=CONSISTENCY)
