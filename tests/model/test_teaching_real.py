"""Teaching pages on the real model: every lesson step's answer is computed live and fills its
template in both languages; the lessons' contrasts hold; the life-of-a-token trace matches the
engine's own next-token logits."""
import pytest
import torch

from lib.concepts.lessons.answers import answer
from lib.concepts.lessons.catalog import LESSONS
from lib.concepts.life_of_a_token.trace import trace_token
from lib.decoding.generate import next_token_logits
from lib.decoding.sampling import SamplingConfig
from lib.model.tokens import encode_prompt
from lib.ui.i18n import Texts, load_texts

pytestmark = pytest.mark.real_model


def params(step, lang):
    p = dict(step.params)
    for name, f, key in step.text_defaults:
        p.setdefault(name, load_texts(f)[lang][key])
    return tuple(sorted(p.items()))


@pytest.fixture(scope="module")
def keys(real_model):
    torch.manual_seed(0)
    # a step borrowed by the 90-minute path (s.texts set) is its own lesson's step: computed once
    return {(x.id, n): answer(real_model, s.answer, params(s, "en")) for x in LESSONS
            for n, s in enumerate(x.steps, 1) if not s.texts}


def test_every_answer_fills_its_template_in_both_languages(keys):
    for lang in ("en", "id"):
        t = Texts("lessons", lang)
        for (lesson, n), values in keys.items():
            text = t(f"{lesson}_{n}_answer", **values)
            assert "{" not in text, (lesson, n)
        for x in LESSONS:                      # the borrowed steps' keys name a computed step
            for s in x.steps:
                if s.texts:
                    lid, m = s.texts.rsplit("_", 1)
                    assert (lid, int(m)) in keys, (x.id, s.texts)


def test_the_indonesian_steps_compare_with_the_english_question(keys):
    d8, s8 = keys[("decoding", 8)], keys[("serving", 8)]
    d2, s1 = keys[("decoding", 2)], keys[("serving", 1)]
    assert d8["h_en"] == pytest.approx(d2["h1"], abs=1e-4) and d8["tok_en"] == d2["tok"]   # step 2's numbers
    assert (s8["T_en"], s8["total_en"]) == (s1["T"], s1["total"])                           # step 1's numbers


def test_the_lessons_contrasts_hold_on_this_model(keys):
    assert keys[("decoding", 3)]["n"] < keys[("decoding", 4)]["n"]             # same p, count differs
    d2 = keys[("decoding", 2)]
    assert d2["h05"] < d2["h1"] < d2["h2"]
    assert keys[("decoding", 6)]["after"] != keys[("decoding", 6)]["before"]
    assert keys[("speculative", 2)]["alpha"] > keys[("speculative", 1)]["alpha"]   # 14 layers draft better than 6
    c = keys[("speculative", 3)]
    assert c["tv_fixed"] < 1e-4 < c["tv_none"]
    assert keys[("serving", 4)]["hits"] > keys[("serving", 5)]["hits"]          # one early char breaks reuse
    assert keys[("serving", 6)]["win"] < keys[("serving", 6)]["full"]
    assert keys[("decoding", 7)]["beam"] != keys[("decoding", 7)]["greedy"]    # the whole-sequence view wins here
    cow = keys[("serving", 7)]                 # two samples share A's partly filled last block: one copy
    assert cow["cow"] == (1 if cow["rest"] else 0) and cow["peak"] <= cow["blocks"]


def test_trace_logits_are_the_engines(real_model):
    ids = encode_prompt(real_model.tokenizer, "The capital of France is").ids
    tr = trace_token(real_model.engine, ids, SamplingConfig(0.8, top_k=40, top_p=0.9), 0)
    torch.testing.assert_close(tr.logits, next_token_logits(real_model.engine, ids), atol=1e-4, rtol=0)
    assert tr.pipeline.kept_count <= 40 and tr.pipeline.probs[tr.token] > 0
