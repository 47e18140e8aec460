"""A lecturer's preparation (issue 33): the answer key in the PDF holds the model's live answers,
the Indonesian steps' answers are consistent, "Prepare this lesson" runs every step with a
progress bar that is gone when done and says how long it took, and a step shows the time its
page took to compute last time (lib/ui/estimate.py). Real model; the one AppTest opens the
lessons page once (the speculative lesson: 4 steps of one forward pass each, ~10 s here)."""
import io
import re
from types import SimpleNamespace
from urllib.parse import parse_qsl

import pytest
from pypdf import PdfReader

from lib.concepts.lessons.answers import answer
from lib.concepts.lessons.catalog import BY_ID, DEFAULT_PROMPT, ID_PROMPT
from lib.model.tokens import encode_prompt
from lib.ui import estimate, lesson_pdf
from lib.ui import lessons as ui
from lib.ui.i18n import Texts, load_texts
from tests.app.open_page import open_page

pytestmark = pytest.mark.real_model


def _flat(s: str) -> str:
    return re.sub(r"\s+", "", s)


def test_answer_key_pdf_has_the_model_s_live_answers(real_model):
    """The speculative lesson's key from the real model: each α obeys α = 1 − TV (computed two
    ways on the page's distributions), and the PDF prints it in Indonesian's decimal comma."""
    lesson, t = BY_ID["speculative"], Texts("lessons", "id")
    key = [answer(real_model, s.answer, ui.answer_params(s, "id")) for s in lesson.steps]
    for v in (key[0], key[1]):
        assert v["alpha"] == pytest.approx(1 - v["tv"], abs=1e-5) and 0 < v["alpha"] < 1
    assert key[1]["k"] == 14 and key[0]["k"] == 6
    data = lesson_pdf.lesson_pdf(t, lesson, "", key, "Gemma 3 270M", "now")
    text = _flat("".join(p.extract_text() for p in PdfReader(io.BytesIO(data)).pages))
    for v in (key[0], key[1]):
        assert f"α={t.num(v['alpha'], '.3f')}" in text
    assert "," in t.num(key[0]["alpha"], ".3f")


def test_indonesian_steps_set_their_prompt_beside_the_english_one(real_model):
    d = answer(real_model, "entropy_en_id", (("prompt", ID_PROMPT),))
    s = answer(real_model, "cache_en_id", (("prompt", ID_PROMPT),))
    for lang, prompt in (("id", ID_PROMPT), ("en", DEFAULT_PROMPT)):
        n = len(encode_prompt(real_model.tokenizer, prompt, 256).ids)
        assert d[f"n_{lang}"] == n and s[f"T_{lang}"] == n          # the prompts' own token counts
        assert 0 < d[f"h_{lang}"] < 18 and 0 < d[f"p_{lang}"] <= 1
    # the cache grows by the same bytes per token whatever the language
    assert s["total_id"] / s["T_id"] == s["total_en"] / s["T_en"]
    assert s["ratio"] == pytest.approx(s["T_id"] / s["T_en"])


def test_prepare_this_lesson_shows_progress_then_its_time_and_steps_show_their_estimate():
    lesson = BY_ID["speculative"]
    step = lesson.steps[0]
    query = dict(parse_qsl(ui.step_query(step, "en")))
    estimate.clear()
    used = [SimpleNamespace(origin="computed", prov=SimpleNamespace(seconds=12.25))]
    estimate.record(step.slug, {**query, "view": "present"}, used)        # as a visit of that state would
    at = open_page("lessons", {"lesson": "speculative", "step": "1"})
    assert not at.exception, [e.value for e in at.exception]
    texts = load_texts("lessons")["en"]
    want = Texts("lessons", "en")("step_estimate", s=12.25)
    assert any(want in c.value for c in at.caption), [c.value for c in at.caption]
    at.button(key="lesson-prepare").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.get("progress")                          # the bar is removed when done
    # AppTest serves no pages: the answers are computed, the pages are said not to be opened
    msg = at.warning[0].value
    head = texts["prepared_partly"].split("{")[0]
    assert msg.startswith(head), msg
    seconds = float(re.search(r"([\d.]+) s", msg).group(1))
    assert 0 <= seconds < 600                           # 0.0 when the answers were already cached
    table = at.dataframe[0].value
    assert len(table) == len(lesson.steps)
    estimate.clear()


def test_a_long_page_says_what_the_next_change_may_take():
    """After a run, a long page's caption says what a new setting cost last time on this server
    (the estimate a lecturer sees BEFORE moving a control; lib/ui/estimate.py)."""
    slug = "speculative-acceptance"
    estimate.clear()
    estimate.record(slug, {}, [SimpleNamespace(origin="computed", prov=SimpleNamespace(seconds=7.5))])
    at = open_page(slug, {"k": "6"})
    assert not at.exception, [e.value for e in at.exception]
    ahead = estimate.change_seconds(slug)          # 7.5, or this run's own cost if it computed
    want = Texts("common", "en")("long_estimate", s=ahead)
    assert any(want in c.value for c in at.caption), [c.value[:120] for c in at.caption]
    estimate.clear()
