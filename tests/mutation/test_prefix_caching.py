"""Mutation tests for the prefix-caching page: realistic bugs planted in the concept's code
(lib.concepts.prefix_caching.prefix_cache) must turn at least one of the page's live checks
red; without them every check is green. Real model, two short prompts, block size 8."""
import pytest
import torch

from lib.concepts.prefix_caching import checks, prefix_cache as P

pytestmark = pytest.mark.real_model
A = "You are a careful assistant. Answer in one short sentence.\nQuestion: What is the capital of France?"
B = "You are a careful assistant. Answer in one short sentence.\nQuestion: What is the capital of Japan?"
BS, SHIFT = 8, 16


def key(text_key, **_):
    return text_key


@pytest.fixture(scope="module")
def setup(real_model):
    tok = real_model.tokenizer
    return real_model.engine, tuple(tok(A)["input_ids"]), tuple(tok(B)["input_ids"])


def failed(setup):
    engine, a, b = setup
    res = P.reuse_vs_recompute(engine, a, b, BS, 1)
    n_keep = (len(b) - 1) // BS * BS
    sh0 = P.reuse_at_shifted_positions(engine, b, n_keep, 0)
    sh = P.reuse_at_shifted_positions(engine, b, n_keep, SHIFT)
    lcp = P.common_prefix_len(a, b)
    return [r.name for r in checks.page_checks(res, sh0, sh, lcp, len(b), BS, key) if not r.passed]


def test_all_green_without_a_bug(setup):
    assert failed(setup) == []


def test_shift_not_applied_to_the_new_tokens(setup, monkeypatch):
    """reuse_at_shifted_positions forgets the request's offset: the new tokens (and the
    reference) continue at the cache's own positions, so a shifted reuse looks exact."""
    real = P.reuse_at_shifted_positions

    def buggy(engine, ids, n_reuse, shift):
        r = real(engine, ids, n_reuse, 0)
        return P.ShiftResult(shift, r.n_reuse, r.max_abs_diff, r.argmax_equal, r.top_reuse, r.top_recompute)
    monkeypatch.setattr(P, "reuse_at_shifted_positions", buggy)
    assert "check_shift" in failed(setup)


def test_suffix_cut_one_token_late(setup, monkeypatch):
    """After the block hits, the suffix is cut one token too late (new_ids[n + 1:]): the
    first uncached token is never computed."""
    real = P.paged_forward

    def buggy(engine, pool, manager, names, suffixes, **kw):
        if names == ["new"] and len(suffixes[0]) > 1:
            suffixes = [suffixes[0][1:]]
        return real(engine, pool, manager, names, suffixes, **kw)
    monkeypatch.setattr(P, "paged_forward", buggy)
    assert "check_equal" in failed(setup)


def test_block_hash_that_names_only_its_own_tokens():
    """lib/core/cache/block_manager.chain_hash ignoring the previous block: two
    prefixes that differ only in block 1 would share every later block (issue 32)."""
    import hashlib

    from lib.core.cache import block_manager
    from lib.concepts.prefix_caching import checks as pc

    def key(text_key, /, **_):
        return text_key

    A = list(range(100, 148))                     # 3 blocks of 16
    B = A[:16] + list(range(300, 332))
    assert pc.chain_check(A, B, 16, key).passed
    real = block_manager.chain_hash
    try:
        block_manager.chain_hash = lambda prev, ids: hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()
        assert not pc.chain_check(A, B, 16, key).passed
    finally:
        block_manager.chain_hash = real
