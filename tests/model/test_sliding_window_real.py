"""The sliding-window claims on the real Gemma 3 270M (short texts, small windows)."""
import pytest

from lib.core.cache import policy as cp
from lib.concepts.sliding_window import fact_distance
from lib.reference import policy_checks
from lib.model.long_text import long_text

pytestmark = pytest.mark.real_model

FACT = "Remember this: the secret password is tulip."
QUESTION = "\nQuestion: What is the secret password?\nAnswer: The secret password is"


@pytest.fixture(scope="module")
def probe(real_model):
    return fact_distance.build_probe(real_model.tokenizer, FACT, long_text()[:6000], QUESTION, " tulip")


def test_fact_is_lost_only_when_every_layer_is_windowed(real_model, probe):
    """W = 32: at d = 20 all layouts agree exactly; at d = 96 the all-windowed model has lost
    the fact (p falls far below dense), while global layers keep it for the hybrid layout."""
    e = real_model.engine
    ds = (20, 96)
    dense = fact_distance.answer_prob(e, probe, ds, cp.dense())
    hybrid = fact_distance.answer_prob(e, probe, ds, cp.window(32, "local"))
    windowed = fact_distance.answer_prob(e, probe, ds, cp.window(32))
    assert dense.prob[0] == windowed.prob[0] == hybrid.prob[0]
    assert dense.prob[1] > 0.05                      # the model does use the fact
    assert windowed.prob[1] < dense.prob[1] / 10     # ... and cannot once it is evicted everywhere
    assert hybrid.prob[1] > windowed.prob[1] * 3     # global layers still carry it


def test_evicted_keys_get_zero_attention_and_eviction_matches_mask(real_model, probe):
    e = real_model.engine
    ids = probe.fact_ids + probe.filler_ids[:40] + probe.question_ids
    z = policy_checks.evicted_attention(e, ids, cp.window(16))
    assert z.pairs > 1000 and z.max_weight == 0.0 and z.inside_zero == 0 and z.row_sum_err < 1e-4
    par = policy_checks.eviction_matches_mask(e, ids[:20], cp.window(6, "local"))
    assert par.rel_diff < 1e-5
    assert par.measured_bytes == par.formula_bytes
    assert par.held == 6 * 15 + 20 * 3               # 15 local layers keep 6, 3 global keep 20
