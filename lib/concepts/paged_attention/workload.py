"""The paged-attention page's workload: four requests sharing one block pool.

A is the visitor's prompt, sampled twice (greedy and at T = 1 with `seed`: two sequences that
share A's prompt blocks until copy-on-write); B and D generate half as many tokens; D arrives
at step 2. The page and the lessons' answer key build it here, so both run the same thing."""
from __future__ import annotations

from lib.decoding.paged_generation import Request


def page_requests(prompt_ids, others, n_new: int, seed: int) -> tuple[Request, ...]:
    """`prompt_ids` for A, `others` = the ids of B, C and D's prompts."""
    half = max(2, n_new // 2)
    return (
        Request("A", tuple(prompt_ids), n_new, 0, ((0.0, 0), (1.0, seed))),
        Request("B", tuple(others[0]), half, 0),
        Request("C", tuple(others[1]), n_new, 0),
        Request("D", tuple(others[2]), half, 2),
    )
