"""Prefix reuse on a tiny random Gemma 3: equal to recompute, wrong at shifted positions."""
import pytest
import torch

from lib.model.from_transformers import engine_from_hf
from lib.concepts.prefix_caching.prefix_cache import common_prefix_len, match_blocks, prefix_kv, reuse_at_shifted_positions, reuse_vs_recompute, token_diff
from tests.conftest import tiny_gemma3


@pytest.fixture(scope="module")
def eng():
    hf = tiny_gemma3(window=64)
    return engine_from_hf(hf)


def ids(n, seed):
    return torch.randint(0, 97, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def test_common_prefix_and_diff():
    assert common_prefix_len([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix_len([], [1]) == 0
    d = token_diff([1, 2, 3], [1, 9, 3, 4])
    assert [x[0] for x in d] == ["same", "after", "after", "after"] and d[3][2] is None


def test_match_blocks_hits_then_misses_after_first_change():
    a = ids(40, 0)
    b = a[:20] + [5] + a[21:]                          # change inside block 1 (block size 8)
    rows = match_blocks(a, b, 8)
    assert [r.hit for r in rows] == [True, True, False, False, False]
    early = [a[0] ^ 1] + a[1:]
    assert not any(r.hit for r in match_blocks(a, early, 8))


def test_reuse_equals_recompute(eng):
    a = ids(37, 1)
    b = a[:30] + ids(9, 2)
    res = reuse_vs_recompute(eng, a, b, block_size=8, repeats=2)   # repeats must not hit B itself
    assert res.n_reused == 24 and len(res.hit_blocks) == 3
    assert res.max_abs_diff <= 1e-5 and res.argmax_equal


def test_reuse_at_shifted_positions_is_wrong(eng):
    x = ids(30, 3)
    assert reuse_at_shifted_positions(eng, x, 20, 0).max_abs_diff <= 1e-5
    assert reuse_at_shifted_positions(eng, x, 20, 7).max_abs_diff > 1e-2


def test_one_prefix_cache_serves_every_shift_and_is_left_as_it_was(eng):
    x = ids(30, 4)
    kv = prefix_kv(eng, x, 20)
    assert kv.length(0) == 20
    for shift in (0, 7):
        shared = reuse_at_shifted_positions(eng, x, 20, shift, _prefix=kv)
        alone = reuse_at_shifted_positions(eng, x, 20, shift)
        assert shared == alone
    assert kv.length(0) == 20 and kv.next_position == 20      # each shift continued a clone


def test_expected_reuse_counts_whole_blocks_and_never_the_last_one():
    from lib.concepts.prefix_caching.checks import expected_reuse

    assert expected_reuse(35, 40, 16) == 32
    assert expected_reuse(40, 40, 16) == 32       # the block holding token 39 is computed
    assert expected_reuse(15, 40, 16) == 0
    assert expected_reuse(32, 33, 16) == 32
