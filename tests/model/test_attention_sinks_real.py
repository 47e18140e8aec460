"""Attention sinks on the real Gemma 3 270M over real text (short: fits the test budget)."""
import numpy as np
import pytest

from lib.core.cache import policy as cp
from lib.concepts.attention_sinks.attention_mass import sink_mass
from lib.reference.policy_checks import masked_matches_evicting
from lib.decoding.streaming_eval import nll_masked

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def ids(real_model, gpl_text):
    return tuple(real_model.tokenizer(gpl_text, add_special_tokens=True)["input_ids"][:128])


def test_first_positions_are_attention_sinks(real_model, ids):
    """FACTS.md: BOS takes 0.27-0.73 of the attention in the global layers."""
    m = sink_mass(real_model.engine, ids[:128], first=1, q_from=32)
    spec = real_model.spec
    glob = [l for l in range(spec.n_layers) if spec.windows[l] is None]
    assert m.per_head[glob].mean() > 0.2
    assert (m.per_head.mean(1) > 5 * m.uniform).sum() >= spec.n_layers // 2


@pytest.mark.parametrize("reassign", [False, True], ids=["text-positions", "cache-positions"])
def test_masked_evaluation_equals_real_eviction(real_model, ids, reassign):
    par = masked_matches_evicting(real_model.engine, ids[:28], cp.sinks(2, 6, reassign), chunk=12)
    assert par.after > 14 and par.max_diff < 1e-3


def test_dropping_the_first_tokens_costs_loss(real_model, ids):
    """Window 16 without sinks vs 4 sinks + 12: same budget, measured on real text."""
    e = real_model.engine
    dense = nll_masked(e, ids, cp.dense())
    win = nll_masked(e, ids, cp.window(16))
    snk = nll_masked(e, ids, cp.sinks(4, 12, reassign=True))
    after = dense.positions >= 16
    assert win.perplexity(after) > dense.perplexity(after)
    assert snk.perplexity(after) < win.perplexity(after)
    np.testing.assert_allclose(win.nll[:16], dense.nll[:16], atol=1e-4)
