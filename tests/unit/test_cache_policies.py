"""Cache policies on a tiny random Gemma 3: eviction, masks, re-numbered positions, bytes."""
import numpy as np
import pytest
import torch

from lib.core.cache import policy as cp
from lib.model.from_transformers import engine_from_hf
from lib.core.hooks import Recorder
from lib.core.cache.evicting import Cancelled, new_evicting_cache, step
from lib.core.cache.policy_masks import PolicyReads, policy_hooks
from lib.decoding.streaming_eval import evaluate, nll_evicting, nll_masked, nll_recompute, running_perplexity, token_nll
from tests.conftest import tiny_gemma3

N = 28


@pytest.fixture(scope="module")
def eng():
    hf = tiny_gemma3(window=16)   # layers 0-4 local (16), layer 5 global
    return engine_from_hf(hf)


@pytest.fixture(scope="module")
def eng_w8():
    hf = tiny_gemma3(seed=3, window=8)
    return engine_from_hf(hf)


def ids(n=N, seed=5):
    return tuple(torch.randint(0, 97, (n,), generator=torch.Generator().manual_seed(seed)).tolist())


POLICIES = [cp.window(6), cp.window(6, layers="local"), cp.sinks(3, 5), cp.sinks(2, 6, reassign=True)]


@pytest.mark.parametrize("policy", POLICIES, ids=[p.label for p in POLICIES])
def test_masked_chunks_equal_token_by_token_eviction(eng, policy):
    text = ids()
    ref = nll_evicting(eng, text, policy)
    fast = nll_masked(eng, text, policy, chunk=7)
    np.testing.assert_allclose(fast.nll, ref.nll, atol=2e-5, rtol=0)


@pytest.mark.parametrize("policy", [cp.sinks(2, 12), cp.sinks(2, 12, reassign=True)],
                         ids=["sinks", "sinks-renumbered"])
def test_model_window_still_applies(eng_w8, policy):
    """Policy window 12 > the model's own local window 8: both paths must keep the model's rule."""
    text = ids(26, seed=9)
    np.testing.assert_allclose(nll_masked(eng_w8, text, policy, chunk=5).nll,
                               nll_evicting(eng_w8, text, policy).nll, atol=2e-5, rtol=0)


def test_policies_differ_once_eviction_starts(eng):
    text = ids()
    d = nll_masked(eng, text, cp.dense()).nll
    w = nll_masked(eng, text, cp.window(6)).nll
    np.testing.assert_allclose(w[:6], d[:6], atol=1e-5)   # window not full yet: identical
    assert np.abs(w[6:] - d[6:]).max() > 1e-3            # evicted keys change the outputs


def test_renumbering_changes_sink_scores_only(eng):
    text = ids()
    a = nll_masked(eng, text, cp.sinks(2, 6)).nll
    b = nll_masked(eng, text, cp.sinks(2, 6, reassign=True)).nll
    np.testing.assert_allclose(a[:7], b[:7], atol=1e-5)   # t < S + W - 1: slot = position
    assert np.abs(a - b).max() > 1e-4


def test_evicted_positions_get_exactly_zero_attention(eng):
    policy = cp.sinks(2, 6)
    x = torch.tensor([ids()])
    cache = eng.new_cache(1, N)
    rec = Recorder({"probs"})
    hooks = policy_hooks(eng, cache, policy)
    hooks.update(rec.hooks())
    eng.forward(x, cache, hooks=hooks)
    pos = torch.arange(N)
    for l in range(eng.spec.n_layers):
        p = rec[("probs", l)][0]                                    # (H, T, S)
        allow = cp.visible(policy, eng.spec, l, pos, pos)           # (T, S)
        assert torch.all(p[:, ~allow] == 0.0)                       # exactly zero, not small
        torch.testing.assert_close(p.sum(-1), torch.ones(p.shape[:2]), atol=1e-5, rtol=0)
        assert (~allow).sum() > 0


def test_evicting_cache_holds_exactly_the_kept_positions_and_bytes_match(eng):
    policy = cp.sinks(2, 6)
    ec = new_evicting_cache(eng, policy)
    text = ids(25)
    for tok in text:
        step(ec, eng, tok)
    for l in range(eng.spec.n_layers):
        assert ec.cache.positions(l)[0].tolist() == [0, 1] + list(range(19, 25))
    assert ec.cache.nbytes() == cp.kv_bytes(policy, eng.spec, 25)
    local = cp.window(6, layers="local")
    ec = new_evicting_cache(eng, local)
    for tok in text:
        step(ec, eng, tok)
    assert ec.cache.positions(5)[0].tolist() == list(range(25))   # the global layer keeps all
    assert ec.cache.positions(0)[0].tolist() == list(range(19, 25))
    assert ec.cache.nbytes() == cp.kv_bytes(local, eng.spec, 25)


def test_renumbered_cache_uses_slots(eng):
    policy = cp.sinks(2, 6, reassign=True)
    ec = new_evicting_cache(eng, policy)
    for tok in ids(20):
        step(ec, eng, tok)
    assert ec.origin == [0, 1] + list(range(14, 20))
    assert ec.cache.positions(0)[0].tolist() == list(range(8))


def test_kv_bytes_formula(eng):
    s = eng.spec
    per = 2 * s.n_kv_heads * s.head_dim * 4
    assert cp.kv_bytes(cp.dense(), s, 100) == 100 * s.n_layers * per
    assert cp.kv_bytes(cp.window(10), s, 100) == 10 * s.n_layers * per
    assert cp.kv_bytes(cp.window(10, "local"), s, 100) == (10 * 5 + 100) * per
    assert cp.kv_bytes(cp.sinks(4, 10), s, 100) == 14 * s.n_layers * per
    assert cp.kv_bytes(cp.window(10), s, 3) == 3 * s.n_layers * per


def test_visibility_map_of_hybrid_layout(eng):
    m = cp.visibility_map(cp.dense(), eng.spec, 30)               # model's own: local 16
    assert m.shape == (6, 31)
    assert m[5].all() and m[0, 15:].all() and not m[0, :15].any()
    m = cp.visibility_map(cp.sinks(2, 4), eng.spec, 30)
    assert m[5].tolist() == [True, True] + [False] * 25 + [True] * 4
    assert not m[0, :2].any()                                     # sink is 30 back: over 16


def test_recompute_equals_dense_when_window_covers_text_and_fresh_forward_otherwise(eng):
    text = ids(20)
    d = nll_masked(eng, text, cp.dense()).nll
    np.testing.assert_allclose(nll_recompute(eng, text, 64).nll, d, atol=1e-5)
    r = nll_recompute(eng, text, 5, stride=3, batch=2)
    assert r.positions.tolist() == [0, 1, 2, 3, 4, 5, 8, 11, 14, 17]
    t = 11
    win = torch.tensor([text[t - 4:t + 1]])
    logits = eng.forward(win, eng.new_cache(1, 5))[0]
    ref = float(token_nll(logits, torch.tensor([text[t + 1]]))[0])
    assert abs(r.nll[r.positions.tolist().index(t)] - ref) < 1e-5


@pytest.mark.parametrize("policy", [cp.dense(), cp.window(6), cp.sinks(2, 6, reassign=True), cp.recompute(5)],
                         ids=["dense", "window", "sinks-renumbered", "recompute"])
def test_the_first_n_tokens_scores_are_a_slice_of_the_whole_texts(eng, policy):
    """attention-sinks answers a shorter N from the whole text's cached evaluation: every
    score reads only the tokens before it, so `upto(n)` is what evaluating ids[:n] gives."""
    text = ids()
    whole = evaluate(eng, text, policy, chunk=7, stride=3)
    for n in (9, 15, 22):
        alone, cut = evaluate(eng, text[:n], policy, chunk=7, stride=3), whole.upto(n)
        assert cut.positions.tolist() == alone.positions.tolist()
        np.testing.assert_allclose(cut.nll, alone.nll, atol=1e-5, rtol=0)


def test_progress_false_cancels(eng):
    seen = []

    def progress(done, total):
        seen.append(done)
        return done < 10

    with pytest.raises(Cancelled):
        nll_evicting(eng, ids(), cp.window(6), progress=progress)
    assert seen[-1] == 10 and len(seen) == 10
    with pytest.raises(Cancelled):
        nll_masked(eng, ids(), cp.window(6), chunk=4, progress=lambda d, t: d < 5)


def test_running_perplexity():
    np.testing.assert_allclose(running_perplexity(np.log([2.0, 8.0])), [2.0, 4.0])


@pytest.mark.parametrize("kw", [dict(kind="nope"), dict(kind="window"), dict(kind="window", window=0),
                                dict(kind="sinks", window=4), dict(kind="dense", window=4),
                                dict(kind="window", window=4, reassign=True),
                                dict(kind="sinks", window=4, sinks=1, layers="local", reassign=True)])
def test_invalid_policies_are_refused(kw):
    with pytest.raises(ValueError):
        cp.CachePolicy(**kw)


def test_ring_cache_is_a_kv_cache_and_matches_dense_past_the_window(eng):
    """The ring buffer implements the engine's cache protocol and, fed 4 tokens at a time,
    gives the dense cache's logits past the 16-token local window with less storage."""
    from lib.concepts.sliding_window import ring_check
    from lib.core.cache.protocol import KVCacheProtocol
    from lib.core.cache.ring import RingKVCache

    assert isinstance(RingKVCache(eng.spec, 1, 40), KVCacheProtocol)
    ids = tuple(int(i) for i in torch.randint(0, 97, (40,), generator=torch.Generator().manual_seed(1)))
    r = ring_check.ring_matches_dense(eng, ids, 4)
    assert r.compared == 40 - 16 and r.rel_diff < 1e-5
    assert r.ring_bytes == r.formula_bytes < r.dense_bytes


def test_fact_agreement_reads_the_numbers():
    from lib.concepts.sliding_window.fact_distance import FactProbe, agreement

    probe = FactProbe((1, 2, 3), (), (4, 5), 7)
    a = agreement(probe, [np.array([0.5, 0.5, 0.4]), np.array([0.5, 0.5, 0.1])], (4, 5, 9), 8)
    assert (a.last_fit, a.fit_tokens, a.fit_spread) == (5, 8, 0.0)
    assert a.first_out == 9 and a.out_probs == (0.4, 0.1)


def test_generation_under_a_policy_runs_the_one_decode_loop(eng):
    """greedy_under drives lib/decoding's decode loop with a policy's stepper: with nothing
    evicted it is plain greedy decoding; under eviction each token is the argmax of a
    token-by-token evicting run (the same cache the stepper keeps)."""
    from lib.decoding.policy_generation import greedy_under
    from lib.decoding.generate import greedy

    prompt = ids(12)
    plain = greedy(eng, list(prompt), 8).new_ids
    assert [s.token for s in greedy_under(eng, prompt, cp.dense(), 8).steps] == plain
    assert [s.token for s in greedy_under(eng, prompt, cp.recompute(64), 8).steps] == plain
    gen = greedy_under(eng, prompt, cp.sinks(2, 6), 8)
    assert all(s.prob == 1.0 and s.rank == 0 for s in gen.steps)          # T = 0: the argmax, kept alone
    ec = new_evicting_cache(eng, cp.sinks(2, 6), capacity=len(prompt) + 8)
    toks = list(prompt)
    for t in toks[:-1]:
        step(ec, eng, t)
    logits = step(ec, eng, toks[-1])[0, -1]
    for s in gen.steps:
        assert s.token == int(logits.argmax())
        logits = step(ec, eng, s.token)[0, -1]


@pytest.mark.parametrize("W", [8, 12])
def test_a_local_window_no_narrower_than_the_models_own_is_the_models_layout_exactly(eng_w8, W):
    """The sliding-window page's hybrid layout (window W on the local layers) with W >= the
    model's own local window masks nothing the model does not mask itself: answer_prob gives
    the model's own layout's numbers bit for bit, so the page takes them instead of running
    the text a second time (issue 29). A narrower window does change them."""
    from lib.concepts.sliding_window.fact_distance import FactProbe, answer_prob

    probe = FactProbe((2, 11, 12, 13), ids(40, seed=4), (21, 22, 23), 13)
    distances = (4, 9, 20, 30)
    own = answer_prob(eng_w8, probe, distances, cp.dense())
    hybrid = answer_prob(eng_w8, probe, distances, cp.window(W, "local"))
    assert np.array_equal(hybrid.prob, own.prob) and np.array_equal(hybrid.rank, own.rank)
    narrower = answer_prob(eng_w8, probe, distances, cp.window(4, "local"))
    assert not np.array_equal(narrower.prob, own.prob)


READS = [cp.dense(), cp.window(6), cp.window(6, layers="local"), cp.sinks(2, 6), cp.sinks(2, 12, reassign=True)]


@pytest.mark.parametrize("policy", READS, ids=[p.label for p in READS])
def test_policy_reads_hands_attention_only_the_keys_it_may_read(eng_w8, policy):
    """Chunks through PolicyReads give the hidden states of one masked forward over a cache that
    hands attention every entry, while each chunk reads only the sinks and the last `reach`
    positions before its first query (reach: the policy's window or the model's own, 8 on
    layers 0-4, whichever is smaller; the global layer 5 under no policy window: everything)."""
    n, chunk = 40, 5
    text = torch.tensor([ids(n, seed=11)])
    plain = eng_w8.new_cache(1, n)
    whole = eng_w8.forward(text, plain, hooks=policy_hooks(eng_w8, plain, policy), logits="none")   # (1, n, D)
    for kept in (eng_w8.new_cache(1, n), None):             # every entry kept / only what is still readable
        reads = PolicyReads(eng_w8, kept, policy)
        hooks = policy_hooks(eng_w8, reads, policy)
        parts = [eng_w8.forward(text[:, s:s + chunk], reads, hooks=hooks, logits="none") for s in range(0, n, chunk)]
        torch.testing.assert_close(torch.cat(parts, 1), whole, rtol=1e-4, atol=1e-4)
        first = n - chunk                                   # the last chunk's first query
        held = 0
        for l in range(eng_w8.spec.n_layers):
            own = 8 if l < 5 else None
            windowed = policy.kind != "dense" and (policy.layers == "all" or own is not None)
            reach = min([w for w in (policy.window if windowed else None, own) if w is not None], default=None)
            sinks = policy.sinks if windowed else 0
            want = list(range(n)) if reach is None else list(range(sinks)) + list(range(first - reach + 1, n))
            assert reads.positions(l)[0].tolist() == want, l
            held += n if reach is None else min(n, sinks + reach - 1)     # what a next chunk could still read
        if kept is None:                                    # it holds that and nothing more
            per_entry = 2 * eng_w8.spec.n_kv_heads * eng_w8.spec.head_dim * 4
            assert reads.nbytes() == held * per_entry, (reads.nbytes(), held * per_entry)
