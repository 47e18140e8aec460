"""Speculative sampling: the accept/correct rule on hand-built distributions, and the decoder
on a tiny random Gemma 3 (greedy identity, cache rollback, exact output distribution)."""
import numpy as np
import pytest
import torch

from lib.decoding.speculative import acceptance as S
from lib.decoding.speculative.drafts import EngineDraft, PromptLookupDraft, early_exit_distributions, early_exit_forward
from lib.model.from_transformers import engine_from_hf
from lib.decoding.generate import greedy
from lib.decoding.sampling import SamplingConfig
from lib.decoding.speculative.speculative_decode import SpeculativeDecoder, plain_decode, speculative_generate
from lib.concepts.speculative_speed.speculative_speed import block_expectation, expected_speedup, expected_tokens_per_call, tokens_per_call_sd
from tests.conftest import tiny_gemma3, tiny_llama

@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: one thread avoids OpenMP barrier spinning on a busy 2-core machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


P = torch.tensor([0.5, 0.3, 0.1, 0.1, 0.0])
Q = torch.tensor([0.1, 0.2, 0.6, 0.05, 0.05])


def test_acceptance_is_one_minus_total_variation():
    a = S.acceptance_probability(P, Q)
    assert a == pytest.approx(0.1 + 0.2 + 0.1 + 0.05)
    assert a == pytest.approx(1 - S.total_variation(P, Q), abs=1e-12)


def test_residual_is_positive_part_of_p_minus_q():
    r = S.residual(P, Q)
    torch.testing.assert_close(r, torch.tensor([0.4, 0.1, 0.0, 0.05, 0.0]) / 0.55)
    torch.testing.assert_close(S.residual(P, P), P)  # nothing to correct


def test_exact_output_distribution_is_p_and_shortcuts_are_not():
    torch.testing.assert_close(S.output_distribution(P, Q, "residual"), P.double())
    assert float((S.output_distribution(P, Q, "target") - P.double()).abs().sum()) > 0.1
    torch.testing.assert_close(S.output_distribution(P, Q, "none"), Q.double())


def test_monte_carlo_matches_p_only_with_the_residual():
    exact = S.monte_carlo(P, Q, 40_000, seed=0, correction="residual")
    assert S.fit_test(exact.outputs, P).passed()
    assert exact.acceptance_rate == pytest.approx(S.acceptance_probability(P, Q), abs=0.01)
    wrong = S.monte_carlo(P, Q, 40_000, seed=0, correction="target")
    assert not S.fit_test(wrong.outputs, P).passed()
    assert S.fit_test(wrong.outputs, S.output_distribution(P, Q, "target").float()).passed()


def test_monte_carlo_is_reproducible_and_does_not_touch_inputs():
    p, q = P.clone(), Q.clone()
    a = S.monte_carlo(p, q, 1000, seed=3).outputs
    b = S.monte_carlo(p, q, 1000, seed=3).outputs
    assert np.array_equal(a, b)
    assert torch.equal(p, P) and torch.equal(q, Q)
    with pytest.raises(ValueError):
        S.monte_carlo(P, Q, 10, 0, correction="maybe")


def test_accept_or_resample_single_steps():
    g = torch.Generator().manual_seed(0)

    def one(x):
        v = S.accept_or_resample(P, Q, x, g)
        return bool(v.accepted[0]), int(v.out[0])
    # q(x) <= p(x): always accepted
    assert all(one(0) == (True, 0) for _ in range(50))
    # p(x) = 0: always rejected, and the replacement comes from the residual (never token 2 or 4)
    outs = [one(4) for _ in range(200)]
    assert all(not ok and tok in (0, 1, 3) for ok, tok in outs)


def test_accept_or_resample_vectorised_is_the_rule():
    """n proposals at once: u < min(1, p/q) decides, rejected ones come from the residual."""
    g = torch.Generator().manual_seed(1)
    x = torch.tensor([0, 1, 2, 2, 3, 4] * 500)
    v = S.accept_or_resample(P, Q, x, g)
    torch.testing.assert_close(v.ratio, S.acceptance_ratio(P[x], Q[x]))
    assert torch.equal(v.accepted, v.u < v.ratio)
    assert torch.equal(v.out[v.accepted], x[v.accepted])
    assert set(v.out[~v.accepted].tolist()) <= {0, 1, 3}
    none = S.accept_or_resample(P, Q, x, g, correction="none")
    assert bool(none.accepted.all()) and torch.equal(none.out, x)


def test_decoder_records_each_uniform_draw(tiny):
    dec = SpeculativeDecoder(tiny, EngineDraft(tiny, 2), SamplingConfig(1.0), seed=0, keep_top=4)
    dec.start(PROMPT)
    for _ in range(5):
        rec = dec.step(4)
        assert len(rec.u) == min(rec.accepted + 1, len(rec.proposals))
        for i, u in enumerate(rec.u):
            assert (u < rec.accept_prob[i]) == (i < rec.accepted)
        assert bool(rec.top_r) == rec.from_residual


def test_chi_square_survival_function():
    # chi2 with 1 dof: P(X > 3.841) = 0.05 ; 10 dof: P(X > 18.307) = 0.05
    assert S.chi2_sf(3.841459, 1) == pytest.approx(0.05, abs=1e-5)
    assert S.chi2_sf(18.307038, 10) == pytest.approx(0.05, abs=1e-5)


def test_breakdown_sums_to_one_with_rest():
    p = torch.softmax(torch.randn(50, generator=torch.Generator().manual_seed(0)), -1)
    q = torch.softmax(torch.randn(50, generator=torch.Generator().manual_seed(1)), -1)
    b = S.breakdown(p, q, top=4)
    for v in (b.p, b.q, b.residual):
        assert v.sum() == pytest.approx(1.0, abs=1e-6)
    assert b.overlap.sum() == pytest.approx(b.alpha, abs=1e-6)


def test_leviathan_formulas():
    assert expected_tokens_per_call(0.0, 5) == 1.0
    assert expected_tokens_per_call(1.0, 5) == 6.0
    assert expected_tokens_per_call(0.5, 2) == pytest.approx(1 + 0.5 + 0.25)
    assert expected_speedup(0.5, 2, 0.0) == pytest.approx(1.75)
    assert expected_speedup(0.0, 4, 0.25) == pytest.approx(0.5)
    assert tokens_per_call_sd(1.0, 3) == pytest.approx(0.0)
    mean, var = block_expectation([0.5, 0.5])
    assert mean == pytest.approx(1.75) and var == pytest.approx(0.6875)
    assert block_expectation([1.0, 0.0]) == (2.0, 0.0)


def test_prompt_lookup_finds_latest_longest_match():
    d = PromptLookupDraft(vocab=100, max_ngram=2)
    ctx = [1, 2, 3, 4, 9, 2, 3, 7, 8, 5, 2, 3]
    assert d.lookup(ctx, 3) == [7, 8, 5]          # latest earlier "2 3" is followed by 7 8 5
    assert d.lookup([1, 2, 3], 2) == []           # no earlier occurrence
    toks, q = d.propose(ctx, 2, SamplingConfig(0.0), torch.Generator())
    assert toks == [7, 8] and q.shape == (2, 100) and float(q[0, 7]) == 1.0


# ---- the decoder on a tiny random Gemma 3 ----------------------------------------------------
@pytest.fixture(scope="module")
def tiny():
    hf = tiny_gemma3(seed=0)
    return engine_from_hf(hf)


PROMPT = [2, 10, 11, 12, 13, 10, 11, 12, 13, 10, 11]


@pytest.mark.parametrize("gamma", [1, 3, 5])
@pytest.mark.parametrize("kind", ["lookup", "early2", "early6"])
def test_greedy_speculative_equals_plain_greedy(tiny, kind, gamma):
    draft = {"lookup": PromptLookupDraft(tiny.spec.vocab), "early2": EngineDraft(tiny, 2),
             "early6": EngineDraft(tiny, 6)}[kind]
    run = speculative_generate(tiny, draft, PROMPT, 20, gamma)
    assert run.new_ids == greedy(tiny, PROMPT, 20).new_ids
    assert run.target_calls <= 20


@pytest.mark.parametrize("gamma", [2, 4])
def test_a_second_model_with_the_same_vocabulary_drafts_exactly(tiny, gamma):
    """Draft (c): another architecture (a tiny Qwen3) sharing the token ids. Greedy output is
    the target's own, whatever the draft proposes; the draft's cache is its own."""
    other = tiny_llama("qwen3", seed=3)
    draft_engine = engine_from_hf(other)
    run = speculative_generate(tiny, EngineDraft(draft_engine), PROMPT, 16, gamma)
    assert run.new_ids == greedy(tiny, PROMPT, 16).new_ids
    assert 0 <= run.accepted <= run.proposed and run.target_calls <= 16


def test_full_depth_draft_accepts_everything(tiny):
    run = speculative_generate(tiny, EngineDraft(tiny, 6), PROMPT, 12, 3, SamplingConfig(1.0), seed=1)
    assert run.accepted == run.proposed and run.tokens_per_call == pytest.approx(4.0)


def test_rollback_leaves_target_cache_equal_to_fresh_prefill(tiny):
    dec = SpeculativeDecoder(tiny, EngineDraft(tiny, 2), SamplingConfig(1.0), seed=0)
    dec.start(PROMPT)
    rejected = 0
    for _ in range(6):
        rec = dec.step(4)
        rejected += rec.accepted < len(rec.proposals)
    assert rejected > 0                                   # some rollback really happened
    done = dec.committed[:-1]
    fresh = tiny.new_cache()
    tiny.forward(torch.tensor([done]), fresh, logits="none")
    assert dec.cache.length(0) == fresh.length(0) == len(done)
    assert dec.cache.next_position == fresh.next_position
    for l in range(tiny.spec.n_layers):
        torch.testing.assert_close(dec.cache.keys(l), fresh.keys(l), atol=1e-5, rtol=0)
        torch.testing.assert_close(dec.cache.values(l), fresh.values(l), atol=1e-5, rtol=0)
        assert torch.equal(dec.cache.positions(l), fresh.positions(l))
    # the draft's own cache (first 2 layers) agrees with a fresh early-exit prefill too
    n = dec.draft.cache.length(0)
    ref = tiny.new_cache()
    early_exit_forward(tiny, torch.tensor([dec.committed[:n]]), ref, 2)
    torch.testing.assert_close(dec.draft.cache.keys(1), ref.keys(1), atol=1e-5, rtol=0)


@pytest.mark.parametrize("k,gamma,T", [(2, 4, 1.0), (1, 1, 0.7), (5, 3, 0.0)])
def test_a_block_primed_by_the_prompts_one_forward_is_the_same_block(tiny, k, gamma, T):
    """early_exit_block with `_exits` (one forward over the prompt serves the target's and the
    draft's prefill, the first proposal and the pending token's row) draws the same tokens with
    the same probabilities as the block that prefills both itself, and leaves the same cache;
    the page's cached EarlyExits is not touched."""
    from lib.decoding.speculative.drafts import early_exit_logits
    from lib.decoding.speculative.speculative_decode import early_exit_block, one_block

    exits = early_exit_logits(tiny, PROMPT)
    before = (exits.cache.length(0), exits.cache.keys(3).clone(), exits.final.clone())
    cfg = SamplingConfig(T)
    for seed in range(4):
        plain = early_exit_block(tiny, PROMPT, k, gamma, cfg, seed)
        primed = early_exit_block(tiny, PROMPT, k, gamma, cfg, seed, _exits=exits)
        assert (primed.proposals, primed.accepted, primed.token, primed.u) == \
               (plain.proposals, plain.accepted, plain.token, plain.u)
        for a, b in ((primed.p_prob, plain.p_prob), (primed.q_prob, plain.q_prob), (primed.alpha, plain.alpha)):
            assert a == pytest.approx(b, abs=1e-5)
    assert exits.cache.length(0) == before[0] and torch.equal(exits.cache.keys(3), before[1])
    assert torch.equal(exits.final, before[2])
    # the primed decoder's caches after its block: the committed tokens but the pending one, as a fresh prefill
    dec = SpeculativeDecoder(tiny, EngineDraft(tiny, k, after_prompt=exits.for_draft(k)), cfg, 0)
    dec.start(PROMPT, primed=exits.for_target())
    dec.step(gamma)
    fresh = tiny.new_cache()
    tiny.forward(torch.tensor([dec.committed[:-1]]), fresh, logits="none")
    assert dec.cache.length(0) == fresh.length(0) and dec.cache.next_position == fresh.next_position
    torch.testing.assert_close(dec.cache.keys(5), fresh.keys(5), atol=1e-5, rtol=0)
    assert dec.draft.forwards == gamma - 1            # the first proposal came from the prompt's forward
    assert one_block(tiny, EngineDraft(tiny, k), PROMPT, gamma, cfg, 0, primed=exits.for_target()).proposals == \
           early_exit_block(tiny, PROMPT, k, gamma, cfg, 0).proposals


@pytest.mark.slow  # 300 seeded speculative runs for a chi-square test
def test_sampled_speculative_first_token_follows_p(tiny):
    """The first output token of many seeded runs is distributed as p (exact rule, weak draft)."""
    cfg = SamplingConfig(1.5)
    p, _ = early_exit_distributions(tiny, PROMPT, cfg)
    firsts = [speculative_generate(tiny, EngineDraft(tiny, 1), PROMPT, 1, 2, cfg, seed=s).new_ids[0]
              for s in range(300)]
    assert S.fit_test(np.array(firsts), p, min_expected=20).passed()


def test_early_exit_at_full_depth_is_the_target(tiny):
    cfg = SamplingConfig(1.0)
    p, qs = early_exit_distributions(tiny, PROMPT, cfg)
    assert qs.shape == (6, 97)
    torch.testing.assert_close(qs[-1], p, atol=1e-6, rtol=0)


def test_plain_decode_is_generate_greedy(tiny):
    assert plain_decode(tiny, PROMPT, 10).new_ids == greedy(tiny, PROMPT, 10).new_ids


def test_vocab_subset_draft_stays_exact(tiny):
    draft = EngineDraft(tiny, 3, vocab_subset=range(0, 97, 2))
    run = speculative_generate(tiny, draft, PROMPT, 12, 3)
    assert run.new_ids == greedy(tiny, PROMPT, 12).new_ids


# ---- timed runs: held-out band, verdict (synthetic cells) --------------------------------------
def _cell(alpha, gamma, calls, tpc, spec_s=(1.0, 1.0, 1.0), plain_s=(1.0, 1.0, 1.0), verified=40):
    from lib.concepts.speculative_speed.timed_runs import Cell
    from lib.core.timing import Timing

    def tm(x):
        return Timing(x[0], x[1], x[2], 3, 0.0, 2)
    return Cell("d", gamma, int(tpc * calls), gamma * calls, verified, calls, tpc, alpha, alpha, 0.0, 0.0, 0.0,
                0.01, 0.01, tm(spec_s), tm(plain_s), True)


def test_held_out_band_uses_the_other_cells_alpha():
    from lib.concepts.speculative_speed.timed_runs import held_out_band

    c2, c4 = _cell(0.9, 2, 10, 2.7), _cell(0.5, 4, 10, 1.9)
    alpha, pred, half, held = held_out_band(c4, [c2])
    assert held and alpha == pytest.approx(0.9)
    assert pred == pytest.approx(expected_tokens_per_call(0.9, 4))
    assert half > 0
    alpha, _, _, held = held_out_band(c4, [])
    assert not held and alpha == pytest.approx(0.5)


def test_verdict_is_chosen_from_the_numbers():
    from lib.concepts.speculative_speed.timed_runs import verdict

    slow = _cell(0.1, 2, 10, 1.1, spec_s=(2.0, 1.9, 2.1))
    assert verdict([slow])[0] == "dont"
    noisy = _cell(0.5, 2, 10, 1.5, spec_s=(0.9, 0.8, 1.2))
    assert verdict([slow, noisy]) == ("noise", noisy)
    fast = _cell(0.9, 4, 10, 3.0, spec_s=(0.5, 0.45, 0.55))
    assert verdict([slow, noisy, fast]) == ("speculate", fast)
