"""Paged attention on a tiny random Gemma 3: same numbers as the contiguous cache."""
import pytest
import torch

from lib.model.from_transformers import engine_from_hf
from lib.core.cache.paged_attention import paged_vs_contiguous
from lib.decoding.paged_generation import Request, run_requests
from tests.conftest import tiny_gemma3


@pytest.fixture(scope="module")
def eng():
    hf = tiny_gemma3(window=8)
    return engine_from_hf(hf)


def rand_ids(n, seed):
    return torch.randint(0, 97, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def test_paged_prefill_equals_contiguous_with_scattered_blocks(eng):
    res = paged_vs_contiguous(eng, rand_ids(45, 0), block_size=4, num_blocks=20, scramble_seed=3)
    assert res.max_abs_diff <= 1e-5 and res.argmax_equal
    assert res.blocks != sorted(res.blocks)           # really not contiguous / in order


def test_concurrent_paged_decode_equals_contiguous_and_frees_everything(eng):
    reqs = [Request("A", tuple(rand_ids(10, 1)), 9, 0, ((0.0, 0), (1.0, 1))),
            Request("B", tuple(rand_ids(23, 2)), 5), Request("C", tuple(rand_ids(5, 3)), 7),
            Request("D", tuple(rand_ids(17, 4)), 6, 2)]
    run = run_requests(eng, reqs, num_blocks=18, block_size=4)
    assert run.invariant_errors == []
    assert run.max_abs_diff <= 1e-4 and run.argmax_equal
    assert run.n_checked == 9 + 9 + 5 + 7 + 6
    assert len(run.cow_copies) == 1                    # A's shared partial block, copied once
    assert run.snapshots[-1].used_blocks == 0
    # blocks freed by earlier requests are handed to later ones
    first_use = {}
    for sn in run.snapshots:
        for s, t in sn.tables.items():
            first_use.setdefault(s, set(t))
    assert first_use["D"] & (first_use["A.1"] | first_use["A.2"] | first_use["B"] | first_use["C"])
    for sn in run.snapshots:                           # waste < one block per sequence
        for s, t in sn.tables.items():
            assert len(t) * 4 - sn.lengths[s] < 4


def test_events_are_sentences_and_copies_expected_only_for_a_partial_block(eng):
    from lib.concepts.paged_attention import checks, events
    reqs = [Request("A", tuple(rand_ids(10, 1)), 5, 0, ((0.0, 0), (1.0, 1))), Request("B", tuple(rand_ids(9, 2)), 4, 1)]
    run = run_requests(eng, reqs, num_blocks=8, block_size=4)
    kinds = [e[0] for sn in run.snapshots for e in sn.events]
    assert kinds[0] == "admit" and "decode" in kinds and "cow" in kinds and kinds.count("free") == 3
    t = lambda key, **f: key + ":" + ",".join(f"{k}={v}" for k, v in sorted(f.items()))  # noqa: E731
    log = events.step_log(run.snapshots, len(run.snapshots) - 1, t)
    assert log[0][1].startswith("ev_admit:") and "ev_fork" in log[0][1]
    assert any(line.startswith("ev_cow:") for _, line in log)
    assert checks.expected_copies(10, 4) == 1 and checks.expected_copies(12, 4) == 0
    assert checks.expected_copies(10, 4, n_samples=3) == 2
    assert len(run.cow_copies) == checks.expected_copies(10, 4)
