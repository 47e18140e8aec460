"""Mutation tests for the attention-sinks page: realistic bugs planted in the concept's code
(lib.core.cache.evicting: the cache that really evicts, and its re-numbering of positions)
must turn at least one of the page's live checks red; without them every check is green.
Real model, the first 28 tokens of the long text (as the page's parity check)."""
import pytest
import torch

from lib.concepts.attention_sinks import attention_mass, checks
from lib.reference import policy_checks
from lib.core.cache import evicting, policy as cp
from lib.core.rope import rerotate
from lib.model.long_text import long_text

pytestmark = pytest.mark.real_model
N_PAR, N_MASS = 28, 64


def key(text_key, **_):
    return text_key


@pytest.fixture(scope="module")
def setup(real_model):
    ids = tuple(real_model.tokenizer(long_text()[:2000])["input_ids"])
    mass = attention_mass.sink_mass(real_model.engine, ids[:N_MASS], 4, 32)
    return real_model.engine, ids, mass


def failed(setup, reassign=True):
    engine, ids, mass = setup
    pol = cp.sinks(2, 6, reassign)
    par = policy_checks.masked_matches_evicting(engine, ids[:N_PAR], pol)
    res = checks.page_checks(par, pol, mass, None, None, 8, key, lambda p: p.label)
    return [r.name for r in res if not r.passed]


def test_all_green_without_a_bug(setup):
    assert failed(setup) == []
    assert failed(setup, reassign=False) == []


def test_eviction_drops_a_sink(setup, monkeypatch):
    """evict_for keeps sinks 0..S-2 only (off by one on the sinks)."""
    real = evicting.evict_for

    def buggy(ec, engine, t):
        p = ec.policy
        one_less = cp.CachePolicy(p.kind, p.window, max(p.sinks - 1, 0) if p.sinks > 1 else p.sinks, p.layers, p.reassign)
        ec.policy = one_less
        try:
            real(ec, engine, t)
        finally:
            ec.policy = p
    monkeypatch.setattr(evicting, "evict_for", buggy)
    assert {"check_parity", "check_held"} & set(failed(setup))


def test_renumbering_rotates_the_wrong_way(setup, monkeypatch):
    """renumber re-rotates the cached keys by (old − new) instead of (new − old)."""
    def buggy(cache, engine):
        for l in range(cache.n_layers):
            old = cache.positions(l)
            new = torch.arange(old.shape[1], device=old.device).expand_as(old)
            delta = old - new
            if bool((delta != 0).any()):
                keys = cache.keys(l)
                keys.copy_(rerotate(keys, delta, engine.inv_freq[l]))
                old.copy_(new)
        cache.next_position = cache.length(0)
    monkeypatch.setattr(evicting, "renumber", buggy)
    assert "check_parity" in failed(setup)
