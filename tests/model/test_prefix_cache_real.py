"""Prefix caching on the real model: exact reuse, wrong at shifted positions, hash-chain misses."""
import pytest

from lib.concepts.prefix_caching.prefix_cache import common_prefix_len, match_blocks, one_char_edit, reuse_at_shifted_positions, reuse_vs_recompute

pytestmark = pytest.mark.real_model

SYSTEM = ("You are the help desk of a public library. Answer briefly and politely, quote the library rules "
          "when they apply, and never invent opening hours.\n\nQuestion: ")


def test_reuse_equals_recompute_and_shift_breaks_it(real_model):
    tok, eng = real_model.tokenizer, real_model.engine
    a = tok(SYSTEM + "Can I borrow five books at once?")["input_ids"]
    b = tok(SYSTEM + "When do you close on Saturday?")["input_ids"]
    res = reuse_vs_recompute(eng, a, b, block_size=16, repeats=1)
    assert res.n_reused >= 16 and res.n_reused % 16 == 0
    assert res.max_abs_diff <= 1e-3 and res.argmax_equal
    assert reuse_at_shifted_positions(eng, b, res.n_reused, 0).max_abs_diff <= 1e-3
    assert reuse_at_shifted_positions(eng, b, res.n_reused, 16).max_abs_diff > 1e-2


def test_one_character_edit_early_misses_every_block(real_model):
    tok = real_model.tokenizer
    text = SYSTEM + "Can I borrow five books at once?"
    edited = one_char_edit(text)
    assert edited != text and edited.lower() == text.lower()
    rows = match_blocks(tok(text)["input_ids"], tok(edited)["input_ids"], 16)
    assert len(rows) >= 3 and not any(r.hit for r in rows)
    a, b = tok(text)["input_ids"], tok(text + " Thanks.")["input_ids"]
    same = match_blocks(a, b, 16)
    hits = [r.hit for r in same]
    assert hits == sorted(hits, reverse=True)                       # hits, then only misses
    assert sum(hits) == min(common_prefix_len(a, b) // 16, (len(b) - 1) // 16) >= 2
