"""Chunked prefill on the real model: same logits and K/V as one forward pass, and the same
tokens for requests decoding while a prompt is prefilled whole or in chunks."""
import pytest

from lib.concepts.chunked_prefill.chunked_prefill import chunked_vs_oneshot
from lib.concepts.chunked_prefill.real_schedule import run_schedule

pytestmark = pytest.mark.real_model


@pytest.mark.parametrize("chunk", [7, 32])
def test_chunked_prefill_equals_one_shot(real_model, gpl_text, chunk):
    ids = real_model.tokenizer(gpl_text[:500])["input_ids"][:80]
    res = chunked_vs_oneshot(real_model.engine, ids, chunk)
    assert res.n_chunks == -(-80 // chunk)
    assert res.max_abs_diff <= 1e-3 and res.cache_diff <= 1e-3 and res.argmax_equal


def test_real_schedule_same_tokens_with_and_without_chunks(real_model):
    naive = run_schedule(real_model.engine, 2, 48, None, before=1, after=1, context=16)
    chunked = run_schedule(real_model.engine, 2, 48, 16, before=1, after=1, context=16)
    assert naive.prefill_tokens == [0, 48, 0] and chunked.prefill_tokens == [0, 16, 16, 16, 0]
    assert naive.running_tokens == chunked.running_tokens[:3]
    assert naive.first_token == chunked.first_token
    assert all(s > 0 for s in naive.step_s + chunked.step_s)


def _key(text_key, /, **_):
    return text_key


def test_correct_code_on_a_deliberately_loaded_machine_shows_no_failure(real_model):
    """Issue 32 item 5: the page's timing checks, measured while busy programs occupy every
    core, give no ❌ (a timing that fails under that load is "not judged" and says why)."""
    from lib.concepts.chunked_prefill import chunked_prefill, checks
    from lib.concepts.chunked_prefill import real_schedule as rs
    from tests.mutation.busy_cores import busy_cores

    e = real_model.engine
    L, chunk, n = 64, 32, 2             # small: under two spinners per core every step is slow
    # the spinners run until the block ends (its limit only a safety net): with a 60 s limit they
    # once stopped while the loaded measurements, slower under the load, were still running
    with busy_cores(limit_s=600):
        costs = chunked_prefill.measure_costs(e, (16, 32, 64), (1, 2), repeats=2)
        real_n, real_c = rs.run_schedules(e, n, L, (None, chunk), repeats=2)
    assert max(real_n.others_cpu, real_c.others_cpu) > checks.BUSY_OTHERS      # the load was seen
    cc = chunked_prefill.chunked_vs_oneshot(e, list(range(100, 160)), chunk)
    results = checks.page_checks(cc, real_n, real_c, rs.predicted_steps(costs, n, L, None),
                                 rs.predicted_steps(costs, n, L, chunk), _key)
    assert [r.name for r in results if r.passed is False] == []
