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


def test_the_batching_check_reads_its_alone_side_from_the_runs_recompute(eng, monkeypatch):
    """Issue 32 item 6: PagedRun.prompt_hidden (the contiguous recompute's final hidden states
    at the prompt) stands for each cut prompt alone: the same comparison as four forwards of
    its own, and still red for a scheduler that reads a short row at its padded end."""
    from lib.decoding import batching
    from lib.reference.batch_reference import batched_vs_alone

    reqs = [Request("A", tuple(rand_ids(10, 1)), 3, 0, ((0.0, 0), (1.0, 1))), Request("B", tuple(rand_ids(23, 2)), 3),
            Request("C", tuple(rand_ids(5, 3)), 3)]
    run = run_requests(eng, reqs, num_blocks=40, block_size=4)
    assert {k: v.shape for k, v in run.prompt_hidden.items()} == {r.rid: (len(r.prompt_ids), eng.spec.hidden)
                                                                  for r in reqs}
    prompts = tuple(r.prompt_ids for r in reqs)
    shared = batched_vs_alone(eng, prompts, tuple(run.prompt_hidden[r.rid] for r in reqs))
    own = batched_vs_alone(eng, prompts)
    assert shared.lengths == own.lengths == (10, 16, 5)
    assert shared.argmax_equal and own.argmax_equal
    assert shared.max_abs_diff <= 1e-4 and abs(shared.max_abs_diff - own.max_abs_diff) <= 1e-4
    # rows read at the padded end: the shared alone side sees it as the own one does
    real = batching.batched_forward

    def bad(engine, rs):
        T = max(r[0].shape[1] for r in rs)
        return real(engine, [(torch.nn.functional.pad(r[0], (0, T - r[0].shape[1])), r[1]) for r in rs])
    with monkeypatch.context() as mp:
        mp.setattr(batching, "batched_forward", bad)
        broken = batched_vs_alone(eng, prompts, tuple(run.prompt_hidden[r.rid] for r in reqs))
    assert broken.max_abs_diff > 1e-2
    # an alone row that is not the prompt's own (A given B's alone run) is seen too
    h = run.prompt_hidden
    assert batched_vs_alone(eng, prompts, (h["B"], h["B"], h["C"])).max_abs_diff > 1e-2
    with pytest.raises(ValueError):                    # an alone run shorter than the cut prompt
        batched_vs_alone(eng, prompts, (h["C"], h["B"], h["C"]))


def test_the_plan_is_the_schedule_the_model_run_follows(eng):
    """plan_requests (no model, milliseconds) gives the page its figures before the run: every
    snapshot, copy and refusal must be the real run's, including a request too big for the pool
    and one that waits for blocks."""
    from lib.decoding.paged_generation import plan_requests
    reqs = [Request("A", tuple(rand_ids(10, 1)), 9, 0, ((0.0, 0), (1.0, 1))),
            Request("B", tuple(rand_ids(23, 2)), 5), Request("C", tuple(rand_ids(5, 3)), 7),
            Request("D", tuple(rand_ids(17, 4)), 6, 2), Request("E", tuple(rand_ids(90, 5)), 4, 1)]
    waited = []
    for blocks, bs in ((18, 4), (12, 4), (9, 8)):
        run = run_requests(eng, reqs, num_blocks=blocks, block_size=bs)
        plan = plan_requests(eng.spec, reqs, num_blocks=blocks, block_size=bs, dtype=eng.dtype)
        assert plan.snapshots == run.snapshots
        assert (plan.cow_copies, plan.rejected, plan.bytes_per_token) == (run.cow_copies, run.rejected,
                                                                          run.bytes_per_token)
        assert run.rejected == ["E"]
        waited.append(any(e[0] == "wait" for sn in run.snapshots for e in sn.events))
        assert {s: len(t) for s, t in plan.tokens.items()} == {s: len(t) for s, t in run.tokens.items()}
        assert plan.n_checked == 0 and run.n_checked > 0
    assert any(waited)
