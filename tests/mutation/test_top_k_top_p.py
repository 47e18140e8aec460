"""Mutation tests for the top-k / top-p page: realistic bugs planted in the filters the page
teaches (lib.decoding.sampling.top_p_mask / top_k_mask, run inside the pipeline) must turn at
least one of the page's live checks red; without them every check is green. Real model."""
import pytest
import torch

from lib.concepts.top_k_top_p import checks, top_k_top_p as tkp
from lib.decoding import generate, sampling

pytestmark = pytest.mark.real_model
PROMPT, T, K, P, NEW = "Monday, Tuesday,", 1.0, 40, 0.9, 3
ORDER_TEMPS = (0.25, 1.0, 4.0)


def key(text_key, /, **_):
    return text_key


@pytest.fixture(scope="module")
def setup(real_model):
    ids = tuple(real_model.tokenizer(PROMPT)["input_ids"])
    return real_model.engine, ids, generate.next_token_logits(real_model.engine, ids)


def failed(setup):
    engine, ids, logits = setup
    trace = tkp.nucleus_trace(engine, ids, T, P, 0, NEW)
    effect = tkp.order_effect(logits, P, ORDER_TEMPS)
    inp = checks.check_inputs(logits, T, K, P)
    return {r.name for r in checks.page_checks(inp, trace, effect, key) if not r.passed}


def test_all_green_without_a_bug(setup):
    assert failed(setup) == set()


def test_top_p_drops_the_token_that_crosses_p(setup, monkeypatch):
    """Keep tokens while the cumulative mass INCLUDING the token is <= p: the set never reaches p."""
    def top_p_mask(logits, p):
        probs = torch.softmax(logits.float(), dim=-1)
        srt = torch.sort(probs, descending=True)
        keep_sorted = torch.cumsum(srt.values, -1) <= p
        keep_sorted[..., 0] = True
        return torch.zeros_like(keep_sorted).scatter(-1, srt.indices, keep_sorted)
    monkeypatch.setattr(sampling, "top_p_mask", top_p_mask)
    assert {"check_p", "check_minimal"} & failed(setup)


def test_top_k_keeps_one_too_many(setup, monkeypatch):
    real = sampling.top_k_mask
    monkeypatch.setattr(sampling, "top_k_mask", lambda logits, k: real(logits, k + 1))
    assert "check_k" in failed(setup)


def test_vocab_max_top_k_blocks_transposed(setup, monkeypatch):
    """lib.decoding.vocab_max.top_k reading its blocks transposed (view(W, -1).t(): block b
    holds every nb-th token, but the ids are computed as contiguous blocks): wrong
    alternatives under each generated token; the fast-vs-torch check turns red."""
    from lib.decoding import step_record, vocab_max

    def top_k(x, k):
        k = min(int(k), x.shape[0])
        n = x.shape[0] // vocab_max.W * vocab_max.W
        if n // vocab_max.W <= k:
            return torch.topk(x, k)
        blocks = torch.topk(x[:n].view(vocab_max.W, -1).t().amax(1), k).indices          # transposed
        ids = (blocks[:, None] * vocab_max.W + torch.arange(vocab_max.W)).reshape(-1)
        ids = torch.cat([ids, torch.arange(n, x.shape[0])])
        values, j = torch.topk(x[ids], k)
        return values, ids[j]
    monkeypatch.setattr(vocab_max, "top_k", top_k)
    monkeypatch.setattr(step_record, "top_k", top_k)
    assert failed(setup) == {"check_fast"}


def test_sample_next_scores_p_over_u(setup, monkeypatch):
    """sample_next's race scoring p / u instead of p / e (e = -ln u): its draws' χ² turns red."""
    monkeypatch.setattr(sampling, "race_scores",
                        lambda p, g: p / torch.rand(p.shape, dtype=torch.float64, generator=g))
    assert "check_draws" in failed(setup)
