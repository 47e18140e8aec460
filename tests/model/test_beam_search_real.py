"""The beam-search page's claims on the real Gemma 3 270M, against transformers' generate."""
import pytest
import torch

from lib.concepts.beam_search.beam_search import beam_search, select, sequence_logprob
from lib.concepts.beam_search.beam_search_hf import TableBackend, transformers_beam_search

pytestmark = pytest.mark.real_model
PROMPT = "The capital of France is"
DOT = "."
MAX_NEW = 12
MAX_NEW_PARITY = 8   # transformers' generate with beams is slow on CPU; " Paris." and " the capital of France." fit


@pytest.fixture(scope="module")
def setup(real_model):
    tok = real_model.tokenizer
    ids = tuple(tok(PROMPT)["input_ids"])
    ends = tuple(sorted({*real_model.spec.eos_ids, tok(DOT, add_special_tokens=False)["input_ids"][0]}))
    return ids, ends


def test_our_beam_search_equals_transformers_generate(real_hf, real_engine_with_hf, setup):
    ids, ends = setup
    for nb, alpha, es in ((4, 0.0, False), (3, 2.0, True)):
        rec = beam_search(real_engine_with_hf, ids, nb, MAX_NEW_PARITY, alpha, es, ends)
        s = select(rec, alpha, es)
        with torch.no_grad():
            out = real_hf.generate(torch.tensor([ids]), num_beams=nb, length_penalty=alpha, early_stopping=es,
                                   max_new_tokens=MAX_NEW_PARITY, do_sample=False, eos_token_id=list(ends),
                                   pad_token_id=0, return_dict_in_generate=True, output_scores=True)
        assert rec.hypotheses[s.best].tokens == tuple(out.sequences[0, len(ids):].tolist()), (nb, alpha, es)
        assert s.score == pytest.approx(float(out.sequences_scores[0]), abs=1e-4), (nb, alpha, es)


def test_alpha_flips_the_winner_without_changing_probabilities(real_model, setup):
    """One recorded search: alpha = 0 picks the short ' Paris.', alpha = 1 a longer sentence;
    transformers' algorithm replayed on the recorded logits agrees; Σ log p is the model's."""
    ids, ends = setup
    table: dict = {}
    rec = beam_search(real_model.engine, ids, 4, MAX_NEW, eos_ids=ends, run_to_max=True, logits_table=table)
    tok = real_model.tokenizer
    short, long_ = (rec.hypotheses[select(rec, a, False).best] for a in (0.0, 1.0))
    assert tok.decode(list(short.tokens)) == " Paris."
    assert long_.length > short.length and long_.sum_logprob < short.sum_logprob
    for alpha in (0.0, 1.0):
        s = select(rec, alpha, False)
        assert transformers_beam_search(TableBackend(table), ids, 4, MAX_NEW, alpha, False, ends) == \
            (rec.hypotheses[s.best].tokens, s.score)
    for h in (short, long_):
        assert sequence_logprob(real_model.engine, ids, h.tokens) == pytest.approx(h.sum_logprob, abs=1e-3)
