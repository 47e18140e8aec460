"""Speculative sampling on the real Gemma 3 270M: exactness, greedy identity, cache rollback."""
import pytest
import torch

from lib.decoding.speculative import acceptance as S
from lib.decoding.speculative.drafts import EngineDraft, PromptLookupDraft, early_exit_distributions, frequent_tokens
from lib.decoding.generate import greedy
from lib.model.long_text import long_text
from lib.decoding.sampling import SamplingConfig
from lib.decoding.speculative.speculative_decode import SpeculativeDecoder, speculative_generate
from lib.concepts.speculative_speed.speculative_speed import EASY_PROMPT

pytestmark = pytest.mark.real_model
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def p_and_q(real_model):
    ids = real_model.tokenizer(PROMPT)["input_ids"]
    p, qs = early_exit_distributions(real_model.engine, ids, SamplingConfig(1.0))
    return p, qs


def test_early_exit_at_full_depth_is_the_target(p_and_q):
    p, qs = p_and_q
    assert S.acceptance_probability(p, qs[-1]) > 0.9999


def test_output_follows_p_only_with_the_residual(p_and_q):
    """Real p (target) and q (first 14 layers): 20,000 accept/correct draws."""
    p, qs = p_and_q
    q = qs[13]
    alpha = S.acceptance_probability(p, q)
    assert 0.05 < alpha < 0.95                       # a draft that is neither useless nor perfect
    exact = S.monte_carlo(p, q, 20_000, seed=0, correction="residual")
    fit = S.fit_test(exact.outputs, p)
    assert fit.passed(), fit
    assert abs(exact.acceptance_rate - alpha) < 4 * (alpha * (1 - alpha) / 20_000) ** 0.5
    # the same draws with the residual step removed are rejected by the same test
    for broken in ("target", "none"):
        wrong = S.monte_carlo(p, q, 20_000, seed=0, correction=broken)
        assert not S.fit_test(wrong.outputs, p).passed(), broken


def test_greedy_speculative_equals_plain_greedy(real_model):
    eng, tok = real_model.engine, real_model.tokenizer
    ids = tok(EASY_PROMPT)["input_ids"]
    plain = greedy(eng, ids, 12).new_ids
    lookup = speculative_generate(eng, PromptLookupDraft(real_model.spec.vocab), ids, 12, 4)
    assert lookup.new_ids == plain
    assert lookup.target_calls < 12                    # it did save target calls
    small = EngineDraft(eng, 12, frequent_tokens(tok, [long_text()], ids))
    assert speculative_generate(eng, small, ids, 8, 3).new_ids == plain[:8]


def test_rollback_leaves_target_cache_equal_to_fresh_prefill(real_model):
    eng, tok = real_model.engine, real_model.tokenizer
    ids = tok(PROMPT)["input_ids"]
    dec = SpeculativeDecoder(eng, EngineDraft(eng, 14), SamplingConfig(1.0), seed=0)
    dec.start(ids)
    rejected = sum(r.accepted < len(r.proposals) for r in (dec.step(3) for _ in range(3)))
    assert rejected > 0
    done = dec.committed[:-1]
    fresh = eng.new_cache()
    eng.forward(torch.tensor([done]), fresh, logits="none")
    assert dec.cache.length(0) == fresh.length(0) == len(done)
    for l in range(eng.spec.n_layers):
        torch.testing.assert_close(dec.cache.keys(l), fresh.keys(l), atol=2e-3, rtol=1e-4)
        torch.testing.assert_close(dec.cache.values(l), fresh.values(l), atol=2e-3, rtol=1e-4)
        assert torch.equal(dec.cache.positions(l), fresh.positions(l))
