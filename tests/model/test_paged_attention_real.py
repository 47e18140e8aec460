"""PagedAttention on the real model: the block pool changes where K/V live, not the numbers."""
import pytest

from lib.core.cache.paged_attention import paged_vs_contiguous
from lib.decoding.paged_generation import Request, run_requests

pytestmark = pytest.mark.real_model


def test_paged_prefill_equals_contiguous(real_model, gpl_text):
    ids = real_model.tokenizer(gpl_text[:400])["input_ids"][:70]
    res = paged_vs_contiguous(real_model.engine, ids, block_size=16, num_blocks=12, scramble_seed=1)
    assert res.blocks != list(range(res.blocks[0], res.blocks[0] + len(res.blocks)))   # not one contiguous run
    assert res.max_abs_diff <= 1e-3 and res.argmax_equal


def test_concurrent_requests_share_fork_and_match_contiguous(real_model):
    tok = real_model.tokenizer
    a = tuple(tok("The old lighthouse keeper climbed the stairs every evening, and")["input_ids"])
    b = tuple(tok("A haiku about autumn rain:")["input_ids"])
    assert len(a) % 8 != 0                      # A's last prompt block is partly filled and shared
    run = run_requests(real_model.engine, [Request("A", a, 4, 0, ((0.0, 0), (1.0, 3))), Request("B", b, 3, 1)],
                       num_blocks=10, block_size=8)
    assert run.invariant_errors == [] and run.rejected == []
    assert run.max_abs_diff <= 1e-3 and run.argmax_equal and run.n_checked == 4 + 4 + 3
    assert len(run.cow_copies) == 1
    assert run.tokens["A.1"][:len(a)] == run.tokens["A.2"][:len(a)] == list(a)
    assert run.snapshots[-1].used_blocks == 0
