"""Issue 33's contradictions between a lesson step and the page it opens (re-audit): each lesson
text says what its page says and asks what its page asks (fast: the texts only). The others of
the list have their own tests: see the report of issue 33's re-look, and beside each below."""
import re

import pytest

from lib.ui.i18n import load_texts

NOT_A_PROBABILITY = {"en": "not a probability", "id": "bukan probabilitas"}
HIGHER_LOWER = {"en": ("higher", "lower"), "id": ("lebih tinggi", "lebih rendah")}


@pytest.mark.parametrize("lang", ["en", "id"])
def test_the_beam_search_step_calls_its_score_a_ranking_score_as_the_page_does(lang):
    """(a) Decoding step 7 said "Beam search maximises the probability of the whole sequence
    (divided by L^α)"; the beam-search page says the score Σ log p / L^α is not a probability."""
    lesson, page = load_texts("lessons")[lang], load_texts("beam-search")[lang]
    assert any(NOT_A_PROBABILITY[lang] in v for v in page.values())          # what the page says
    for key, text in lesson.items():
        if "L^α" in text:
            assert "Σ log p / L^α" in text and NOT_A_PROBABILITY[lang] in text, (key, text)
        assert not re.search(r"maximi[sz]es the probability|memaksimalkan probabilitas", text), (key, text)


@pytest.mark.parametrize("lang", ["en", "id"])
def test_the_temperature_step_asks_what_its_page_asks(lang):
    """(d) Decoding step 2 asked "higher or lower? Guess both in bits" while the temperature page's
    prediction offers only higher / lower: the step asks that alone, in the page's words."""
    q = load_texts("lessons")[lang]["decoding_2_q"]
    page = load_texts("temperature")[lang]
    assert (page["q_entropy_higher"], page["q_entropy_lower"]) == HIGHER_LOWER[lang]
    assert all(w in q for w in HIGHER_LOWER[lang]), q
    assert not re.search(r"\bbits?\b", q), q
