"""Issue 31 item 2: every generation steps the model through the decode loop's own two steps,
`prefill` and `decode_one_token` (lib/decoding/generate.py), whatever cache it runs on: the
dense loop itself, beam search, the paged scheduler, chunked prefill's timed schedule, the
CUDA-graph decoder's CPU path and speculative decoding's baseline. Each is run on a tiny
engine whose forward records which function called it; a loop of its own that calls the
engine directly turns this red."""
import sys

import pytest
import torch

from lib.model.from_transformers import engine_from_hf
from tests.conftest import tiny_gemma3

STEPS = {"prefill", "decode_one_token"}


@pytest.fixture()
def eng():
    """A tiny engine whose forward notes in eng.callers the function of lib/decoding/generate.py
    it was called from (or, if none, its direct caller)."""
    e = engine_from_hf(tiny_gemma3(window=8))
    real, e.callers = e.forward, []

    def forward(*a, **k):
        f = caller = sys._getframe(1)
        while f is not None and not f.f_code.co_filename.endswith("lib/decoding/generate.py"):
            f = f.f_back                    # a Seat's forward comes from generate.py's steps too
        e.callers.append((f or caller).f_code.co_name)
        return real(*a, **k)

    e.forward = forward
    return e


def ids(n, seed=0):
    return torch.randint(0, 97, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def test_generate_uses_prefill_and_decode_one_token(eng, monkeypatch):
    """generate's forwards run on the batching scheduler's thread (lib/decoding/batching.py),
    so here the steps themselves are counted: one prefill, then one decode_one_token per token
    but the last, and no other forward."""
    from lib.decoding import generate as G

    steps = []
    for name in STEPS:
        real = getattr(G, name)
        monkeypatch.setattr(G, name, lambda *a, _n=name, _f=real, **k: steps.append(_n) or _f(*a, **k))
    G.greedy(eng, ids(7), 6)
    assert steps == ["prefill"] + ["decode_one_token"] * 5
    assert len(eng.callers) == len(steps)


def test_beam_search_steps_through_decode_one_token(eng):
    from lib.concepts.beam_search.beam_search import beam_search

    rec = beam_search(eng, ids(6), 3, 5)
    assert set(eng.callers) == STEPS
    assert eng.callers.count("decode_one_token") == rec.n_steps - 1


def test_paged_scheduler_steps_through_prefill_and_decode_one_token(eng):
    from lib.decoding.paged_generation import Request, run_requests

    run_requests(eng, [Request("A", tuple(ids(9, 1)), 4), Request("B", tuple(ids(5, 2)), 3, 1)],
                 num_blocks=12, block_size=4)
    generation = [c for c in eng.callers if c != "_compare_with_contiguous"]   # the check's recompute
    assert set(generation) == STEPS and generation.count("prefill") == 2


def test_chunked_prefill_schedule_steps_through_prefill_and_decode_one_token(eng):
    from lib.concepts.chunked_prefill.real_schedule import run_schedule

    run_schedule(eng, 2, 20, 8, before=1, after=1, context=6, repeats=1)
    assert set(eng.callers) == STEPS
    assert eng.callers.count("prefill") == 1 + 3             # the running requests' history, 3 chunks


def test_graphed_decoder_steps_through_decode_one_token(eng):
    from lib.decoding.graphed_greedy import GraphedGreedyDecoder

    GraphedGreedyDecoder(eng, 32).generate(ids(5), 6)
    assert eng.callers == ["prefill"] + ["decode_one_token"] * 5


def test_speculative_baseline_and_verifier_start_through_the_loops_steps(eng):
    from lib.decoding.speculative.speculative_decode import plain_decode

    plain_decode(eng, ids(6), 5)
    assert eng.callers == ["prefill"] + ["decode_one_token"] * 5


def test_speculative_decoding_starts_with_prefill(eng):
    """The verifier's own loop (what the page teaches) starts from the loop's prefill; its
    blocks verify several drafts in one forward, which no single-token step can do."""
    from lib.decoding.speculative.speculative_decode import early_exit_greedy

    early_exit_greedy(eng, ids(6), 2, 2, 6)
    assert "prefill" in eng.callers and "forward" not in eng.callers[:eng.callers.index("prefill")]


def test_prefill_without_the_head_fills_the_same_cache_and_returns_no_logits(eng):
    from lib.decoding.generate import prefill

    x = torch.tensor([ids(7, 3)])
    logits, with_head = prefill(eng, x, eng.new_cache(1, 16))
    none, without = prefill(eng, x, eng.new_cache(1, 16), head=False)
    assert logits.shape[-1] > 1 and none is None
    for layer in range(with_head.n_layers):
        assert torch.equal(with_head.keys(layer), without.keys(layer))
        assert torch.equal(with_head.values(layer), without.values(layer))
