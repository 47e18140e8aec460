"""Mutation tests for the sliding-window page: realistic bugs planted in the concept's code
(lib.core.cache.evicting, lib.core.cache.ring, lib.core.cache.policy) must turn at least one of
the page's live checks red; without them every check is green. The eviction checks run on the
real model with a short text; the ring-buffer checks on a tiny random Gemma 3 (window 8), since
the real model's window needs more than 512 tokens."""
import pytest
import torch

from lib.reference import policy_checks
from lib.concepts.sliding_window import checks, ring_check
from lib.core.cache import evicting, policy as cp, ring as rc
from lib.model.from_transformers import engine_from_hf
from lib.model.long_text import long_text
from tests.conftest import tiny_gemma3

pytestmark = pytest.mark.real_model
W, PAR_W, PAR_N = 16, 8, 20


def key(text_key, **_):
    return text_key


@pytest.fixture(scope="module")
def setup(real_model):
    ids = tuple(real_model.tokenizer(long_text()[:400])["input_ids"])[:W + 12]
    tiny = engine_from_hf(tiny_gemma3(window=8))
    tiny_ids = tuple(int(i) for i in torch.randint(0, 97, (30,), generator=torch.Generator().manual_seed(0)))
    return real_model.engine, ids, tiny, tiny_ids


def failed(setup):
    engine, ids, tiny, tiny_ids = setup
    zero = policy_checks.evicted_attention(engine, ids, cp.window(W))
    par = policy_checks.eviction_matches_mask(engine, ids[:PAR_N], cp.window(PAR_W, "local"))
    ring = ring_check.ring_matches_dense(tiny, tiny_ids, 4)
    res = checks.page_checks(zero, par, ring, None, W, PAR_W, PAR_N, tiny.spec, 4, key)
    return [r.name for r in res if not r.passed]


def test_all_green_without_a_bug(setup):
    assert failed(setup) == []


def test_eviction_keeps_one_entry_too_few(setup, monkeypatch):
    """evict_for drops the oldest entry the window still allows (t - w + 1)."""
    def buggy(ec, engine, t):
        for l in range(engine.spec.n_layers):
            w = cp.policy_window(ec.policy, engine.spec, l)
            if w is None:
                continue
            pos = ec.cache.positions(l)[0]
            index = torch.nonzero((pos < ec.policy.sinks) | (pos > t - w + 1)).flatten()
            if len(index) < ec.cache.length(l):
                ec.cache.keep(l, index)
    monkeypatch.setattr(evicting, "evict_for", buggy)
    assert "check_evict" in failed(setup)


def test_ring_one_slot_too_small(setup, monkeypatch):
    """ring_capacities forgets the − 1 the other way: window + chunk − 2 slots."""
    monkeypatch.setattr(rc, "ring_capacities",
                        lambda windows, n, chunk=1: [n if w is None else min(n, w + chunk - 2) for w in windows])
    assert {"check_ring", "check_bytes"} & set(failed(setup))


def test_bytes_formula_counts_keys_only(setup, monkeypatch):
    """kv_bytes forgets that a cache stores values as well as keys."""
    monkeypatch.setattr(cp, "kv_bytes", lambda policy, spec, n, b=4: sum(cp.entries_per_layer(policy, spec, n))
                        * spec.n_kv_heads * spec.head_dim * b)
    assert "check_bytes" in failed(setup)


def test_policy_window_one_key_too_small(setup, monkeypatch):
    """lib.core.cache.policy.kept keeps t - W + 2..t (W - 1 keys): the attention hook, the
    evicting cache and the ring all follow the same rule, so only the check against the window
    written in closed form (policy_checks.closed_form_visible) sees the key it loses."""
    real = cp.kept

    def short(policy, spec, layer, q_pos, k_pos):
        w = cp.policy_window(policy, spec, layer)
        keep = real(policy, spec, layer, q_pos, k_pos)
        return keep if w is None else keep & ((k_pos[None, :] > q_pos[:, None] - w + 1) | (k_pos[None, :] < policy.sinks))
    monkeypatch.setattr(cp, "kept", short)
    assert "check_zero" in failed(setup)
