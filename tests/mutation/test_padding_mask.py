"""Mutation tests for the padding-mask page: realistic bugs planted in the concept's code
(lib.concepts.padding_mask.padding) must turn at least one of the page's live checks red;
without them every check is green. Real model, three short prompts."""
import pytest
import torch

from lib.concepts.padding_mask import checks, padding as P

pytestmark = pytest.mark.real_model
PROMPTS = ("The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village by the sea,")


def key(text_key, **_):
    return text_key


@pytest.fixture(scope="module")
def setup(real_model):
    tok = real_model.tokenizer
    prompts = tuple(tuple(tok(s)["input_ids"]) for s in PROMPTS)
    pad_id = tok.pad_token_id or 0
    tm = P.measure_times(real_model.engine, prompts, pad_id, (0, 64), repeats=3)
    return real_model.engine, prompts, pad_id, tm


def failed(setup):
    engine, prompts, pad_id, tm = setup
    cmp = P.compare_variants(engine, prompts, pad_id)
    return [r.name for r in checks.page_checks(cmp, tm, tuple(len(p) for p in prompts), key) if not r.passed]


def test_all_green_without_a_bug(setup):
    assert failed(setup) == []


def test_no_cross_on_a_deliberately_loaded_machine(setup):
    """Issue 32 item 5: timed while busy programs occupy every core, the timing check either
    holds or says 'not judged' (None); no check shows ❌."""
    from tests.mutation.busy_cores import busy_cores

    engine, prompts, pad_id, _ = setup
    with busy_cores() as load:
        tm = P.measure_times(engine, prompts, pad_id, (0, 64), repeats=3)
    assert load["others"] > 0.5                                  # the load was there
    res = checks.page_checks(P.compare_variants(engine, prompts, pad_id), tm, tuple(len(p) for p in prompts), key)
    assert [r.name for r in res if r.passed is False] == []


def test_padding_left_unmasked(setup, monkeypatch):
    """pad_batch forgets to mark padding: padding slots get their column as position."""
    real = P.pad_batch

    def buggy(prompts, pad_id, side="left", mode="mask", length=None):
        b = real(prompts, pad_id, side, mode, length)
        cols = torch.arange(b.ids.shape[1]).expand_as(b.positions)
        return P.PaddedBatch(b.ids, torch.where(b.valid, b.positions, cols), b.valid, b.lengths, b.side)
    monkeypatch.setattr(P, "pad_batch", buggy)
    assert "check_equal" in failed(setup)


def test_packing_without_block_diagonal_mask(setup, monkeypatch):
    """segment_hook lets a query see earlier prompts of the packed row (causal mask only)."""
    monkeypatch.setattr(P, "segment_hook", lambda segments: (lambda layer, scores: None))
    assert "check_packed" in failed(setup)


def test_real_tokens_numbered_from_one(setup, monkeypatch):
    """Off by one: the valid range starts one column late, so the first real token (BOS) is masked."""
    real = P.pad_batch

    def buggy(prompts, pad_id, side="left", mode="mask", length=None):
        b = real(prompts, pad_id, side, mode, length)
        pos = b.positions.clone()
        if mode == "mask":
            pos = torch.where(b.valid, pos, -1)
            first = b.valid.float().argmax(-1)                                   # (B,)
            pos[torch.arange(pos.shape[0]), first] = -1
        return P.PaddedBatch(b.ids, pos, b.valid, b.lengths, b.side)
    monkeypatch.setattr(P, "pad_batch", buggy)
    assert "check_equal" in failed(setup)
