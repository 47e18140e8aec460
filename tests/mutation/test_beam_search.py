"""Mutation tests for the beam-search page: realistic bugs planted in the concept's code
(lib.concepts.beam_search.beam_search) must turn at least one of the page's live checks red;
without them every check is green. Real model, 2 beams, 6 new tokens."""
import numpy as np
import pytest
import torch

from lib.concepts.beam_search import beam_rerank, checks
from lib.concepts.beam_search import beam_search as bs
from lib.concepts.beam_search.beam_search_hf import generate_beam_search
from lib.concepts.beam_search.replay import search_with_parity
from lib.decoding.stop_tokens import end_token_ids

pytestmark = pytest.mark.real_model
PROMPT, BEAMS, NEW, ALPHA = "The capital of France is", 2, 6, 1.0
SWEEP = np.round(np.linspace(-1.0, 3.0, 41), 3)


def key(text_key, /, **_):
    return text_key


@pytest.fixture(scope="module")
def setup(real_model):
    torch.manual_seed(0)
    ids = tuple(real_model.tokenizer(PROMPT)["input_ids"])
    ends = end_token_ids(real_model.tokenizer, real_model.spec.eos_ids, ("sentence",))
    theirs = generate_beam_search(real_model.engine, ids, BEAMS, NEW, ends, ALPHA, False)   # transformers: unpatched
    return real_model.engine, ids, ends, theirs


def page_results(setup):
    """What the page computes, in the same order, with whatever code is patched in."""
    engine, ids, ends, theirs = setup
    rec, replays = search_with_parity(engine, ids, BEAMS, NEW, ends, checks.PARITY_ALPHAS, checks.PARITY_MODES)
    sel = bs.select(rec, ALPHA, False)
    sweep = beam_rerank.sweep(rec, SWEEP, False)
    rescored = bs.sequence_logprobs(engine, ids, checks.winners_over_alpha(rec, sweep))
    return checks.page_checks(rec, sel, theirs, replays, sweep, rescored, key)


def failed(results):
    return {r.name for r in results if not r.passed}


def test_all_green_without_a_bug(setup):
    assert failed(page_results(setup)) == set()


def test_length_off_by_one(setup, monkeypatch):
    """L counted with one token too many (e.g. the prompt's last token)."""
    monkeypatch.setattr(bs, "normalized_score",
                        lambda S, L, a: float(np.float32(S) / np.float32((L + 1) ** a)))
    assert {"check_generate", "check_parity"} & failed(page_results(setup))


def test_cache_rows_not_gathered_by_parent(setup, monkeypatch):
    """The KV cache keeps its rows in place instead of following each new beam's parent."""
    real_prefill = bs.prefill

    def prefill(engine, ids, *a, **k):
        logits, cache = real_prefill(engine, ids, *a, **k)
        real_reorder = cache.reorder
        cache.reorder = lambda idx: real_reorder(torch.arange(len(idx)) % cache.batch)
        return logits, cache
    monkeypatch.setattr(bs, "prefill", prefill)
    assert {"check_generate", "check_rescore"} & failed(page_results(setup))


def test_finished_pool_keeps_the_worst(setup, monkeypatch):
    def add(self, index, hyp):
        self.entries.append((bs.normalized_score(hyp.sum_logprob, hyp.length, self.alpha), index))
        self.entries.sort(key=lambda e: e[0])          # ascending: the worst first
        del self.entries[self.num_beams:]
    monkeypatch.setattr(bs.FinishedPool, "add", add)
    assert {"check_generate", "check_parity"} & failed(page_results(setup))
