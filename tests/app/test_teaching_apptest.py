"""Teaching pages through AppTest (issue 14): lessons, glossary and the life of a token in
both languages, the presenter view, and the glossary's link helper."""
import pytest

from lib.ui.i18n import SEPARATORS, load_texts
from tests.app.number_format import bad_numbers, figure_separators, rendered_texts
from tests.app.open_page import all_text, open_page

pytestmark = pytest.mark.real_model
TEACHING = ("lessons", "glossary", "life-of-a-token")


@pytest.mark.parametrize("lang", ["en", "id"])
@pytest.mark.parametrize("slug", TEACHING)
def test_teaching_page_renders_in_both_languages(slug, lang):
    at = open_page(slug, {"lang": lang})
    assert not at.exception, [e.value for e in at.exception]
    title = load_texts(slug)[lang]["title"]
    assert any(title in x.value for x in at.title), [x.value for x in at.title]
    # Numbers written for the language here too (issue 33): text, tables, figures, token hover texts.
    bad = [b for text in rendered_texts(at) for b in bad_numbers(text, lang)]
    assert not bad, "\n".join(bad)
    assert set(figure_separators(at)) <= {SEPARATORS[lang]}, figure_separators(at)


def test_presenter_view_hides_the_code_and_downloads():
    at = open_page("temperature", {"view": "present"})
    assert not at.exception, [e.value for e in at.exception]
    headers = [s.value for s in at.subheader]
    common = load_texts("common")["en"]
    assert common["the_code"] not in headers
    assert common["what_to_notice"] in headers
    assert at.query_params.get("view") in ("present", ["present"])
    assert at.toggle(key="present_toggle").value is True


def test_presenter_toggle_writes_the_url_and_shows_the_code_again():
    at = open_page("temperature", {"view": "present"})
    at.toggle(key="present_toggle").set_value(False).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "view" not in at.query_params
    assert load_texts("common")["en"]["the_code"] in [s.value for s in at.subheader]


def test_glossary_search_is_bound_to_the_url():
    at = open_page("glossary", {"q": "cache", "lang": "id"})
    assert not at.exception
    heads = [s.value for s in at.subheader]
    assert "KV cache" in heads
    assert "temperatur" not in heads


def test_lesson_step_comes_from_the_url_and_next_moves_it():
    at = open_page("lessons", {"lesson": "serving", "step": "2"})
    assert not at.exception, [e.value for e in at.exception]
    texts = load_texts("lessons")["en"]
    assert texts["serving_2_q"] in all_text(at)
    at.button(key="lesson-next").click().run()
    assert not at.exception
    assert texts["serving_3_q"] in all_text(at)
    assert at.query_params.get("step") in ("3", ["3"])
    at.button(key="lesson-back").click().run()
    assert texts["serving_2_q"] in all_text(at)


def test_lesson_answer_key_is_computed_only_when_asked():
    at = open_page("lessons", {"lesson": "serving", "step": "1"})
    assert not at.exception
    assert not at.success                       # no key yet: nothing was computed
    at.button(key="key-compute").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.success                           # "Answer key computed on ..."
    body = all_text(at)
    assert "MiB" in body and "blocks hit" in body


@pytest.mark.parametrize("slug", ["paged-attention", "chunked-prefill"])
def test_scheduler_step_is_in_the_url_and_the_buttons_move_it(slug):
    at = open_page(slug, {"reveal": "1", "step": "2"})
    assert not at.exception, [e.value for e in at.exception]
    at.button(key=f"{slug}.next").click().run()
    assert at.query_params.get("step") in ("3", ["3"])
    at.button(key=f"{slug}.back").click().run()
    at.button(key=f"{slug}.back").click().run()
    assert at.query_params.get("step") in ("1", ["1"])
    at.button(key=f"{slug}.first").click().run()
    assert not at.exception
    assert at.query_params.get("step") in (None, "0", ["0"], [])
