"""Lessons for a lecture hall (issue 33): the 90-minute path adds up, every step opens the SAME
state in both languages (so the projector and the phones show the same numbers), the Indonesian
prompts are steps of their own, and the printable worksheet (fpdf2) opens with pypdf, in the
right language, with its Unicode characters intact (fast: no model)."""
import io
import re

import pytest
from pypdf import PdfReader

from lib.concepts.lessons.catalog import BY_ID, CLASS90, ID_PROMPT, LESSONS
from lib.ui import lesson_pdf
from lib.ui import lessons as ui
from lib.ui.i18n import Texts


def _pdf_text(data: bytes) -> tuple[int, str]:
    reader = PdfReader(io.BytesIO(data))
    return len(reader.pages), "\n".join(p.extract_text() for p in reader.pages)


def _flat(s: str) -> str:
    """Text without whitespace: a PDF wraps lines wherever the column ends."""
    return re.sub(r"\s+", "", s)


def test_every_lesson_s_minutes_add_up_and_a_90_minute_path_exists():
    for lesson in LESSONS:
        assert sum(s.minutes for s in lesson.steps) == lesson.minutes, lesson.id
        assert all(s.minutes > 0 for s in lesson.steps), lesson.id
    assert CLASS90.minutes == 90 and len(CLASS90.steps) >= 10
    assert {s.slug for s in CLASS90.steps} >= {"life-of-a-token", "temperature", "speculative-acceptance",
                                                  "gqa", "paged-attention"}


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda x: x.id)
def test_a_step_opens_the_same_state_in_both_languages(lesson):
    """Issue 33 item 3: only `lang=id` may differ between a step's English and Indonesian link,
    and its answer is computed from the same parameters, so both classes see the same numbers."""
    for n, step in enumerate(lesson.steps, 1):
        en, id_ = ui.step_url(step, "en"), ui.step_url(step, "id")
        assert id_.replace("lang=id", "").rstrip("&?") == en.rstrip("&?") or \
            id_.replace("&lang=id", "") == en, (lesson.id, n, en, id_)
        assert ui.answer_params(step, "en") == ui.answer_params(step, "id"), (lesson.id, n)
        # the prompt quoted in the question is the one the page opens with, in both languages
        prompt = dict(step.params).get("prompt")
        if prompt and "{prompt}" in Texts("lessons", "en").get(f"{lesson.key(n)}_q"):
            for lang in ("en", "id"):
                assert f"“{prompt}”" in ui.step_question(Texts("lessons", lang), lesson, n)


def test_the_indonesian_prompt_is_a_step_of_its_own_in_each_long_lesson():
    for lid in ("decoding", "serving", "class90"):
        steps = [s for s in BY_ID[lid].steps if s.param("prompt") == ID_PROMPT]
        assert steps, lid
    # and no step anywhere switches its prompt by language any more
    assert not any(hasattr(s, "id_params") for x in LESSONS for s in x.steps)


@pytest.mark.parametrize("lang", ["en", "id"])
def test_no_two_steps_of_a_lesson_share_a_title(lang):
    """The home page's lesson cards list the steps by their titles (issue 33: the serving
    lesson listed "Life of a token" twice, its English and its Indonesian step)."""
    t = Texts("lessons", lang)
    for lesson in LESSONS:
        titles = [ui.step_title(t, lesson, n) for n in range(1, len(lesson.steps) + 1)]
        assert len(set(titles)) == len(titles), (lesson.id, titles)


# ---- the PDF worksheet --------------------------------------------------------------------
@pytest.mark.parametrize("lang", ["en", "id"])
@pytest.mark.parametrize("lid", ["decoding", "class90"])
def test_worksheet_pdf_opens_with_every_question_in_its_language(lid, lang):
    lesson, t = BY_ID[lid], Texts("lessons", lang)
    pages, text = _pdf_text(lesson_pdf.lesson_pdf(t, lesson, "http://lab.example"))
    assert pages >= 2, pages
    flat = _flat(text)
    assert _flat(t("ws_title", title=t(f"lesson_{lid}_title"), m=lesson.minutes)) in flat
    for n in range(1, len(lesson.steps) + 1):
        assert _flat(ui.step_question(t, lesson, n)) in flat, (lid, lang, n)
    other = Texts("lessons", "id" if lang == "en" else "en")
    assert _flat(other("pdf_answer")) not in flat          # not the other language's worksheet
    assert flat.count(_flat(t("pdf_answer"))) == len(lesson.steps)        # one answer box per step
    assert t("pdf_key_title") not in text                                # no key without one


def test_unicode_survives_in_the_pdf():
    """Curly quotes, α, Σ, the visible space ␣ and Indonesian's wording reach the PDF as written
    (an embedded TrueType font), not as "?"."""
    if lesson_pdf.font_in_use().startswith("Helvetica"):
        pytest.skip("no TrueType font on this machine: the Latin-1 fallback is tested below")
    lesson, t = BY_ID["decoding"], Texts("lessons", "id")
    sample = "“Ibu kota” α Σ log p / L^α ␣Paris — é"
    t_over = _Override(t, {"answer_label": sample})
    _, text = _pdf_text(lesson_pdf.lesson_pdf(t_over, lesson, "", _fill(lesson, t), "model", "now"))
    assert _flat(text).count(_flat(sample)) == len(lesson.steps)        # once per step of the key
    assert _flat(ui.step_text(t, lesson, 7, "notice")) in _flat(text)      # "Σ log p / L^α" as written


def test_pdf_falls_back_to_a_core_font_when_no_truetype_font_is_found(monkeypatch):
    monkeypatch.setattr(lesson_pdf, "_font_files", lambda: None)
    lesson, t = BY_ID["decoding"], Texts("lessons", "en")
    assert lesson_pdf.font_in_use().startswith("Helvetica")
    pages, text = _pdf_text(lesson_pdf.lesson_pdf(t, lesson, ""))
    assert pages >= 2 and "Beam search" in text
    assert lesson_pdf.latin1("“α” ␣x → Σ") == '"alpha" _x -> sum'


def test_answer_key_pages_carry_the_values_they_are_given():
    """The key is filled from the values passed in (computed live by answer_key; the real-model
    test checks them): change a value and the printed key changes with it."""
    lesson, t = BY_ID["speculative"], Texts("lessons", "id")
    key = [{"k": 6, "alpha": 0.8125, "tv": 0.1875}, {"k": 14, "alpha": 0.9375, "tv": 0.0625},
           {"k": 6, "tv_fixed": 1e-7, "tv_none": 0.25},
           {"k": 14, "alpha": 0.9375, "g1": 2, "e1": 2.82, "g2": 4, "e2": 4.41}]
    _, text = _pdf_text(lesson_pdf.lesson_pdf(t, lesson, "", key, "Gemma 3 270M", "2026-12-03 13:00"))
    flat = _flat(text)
    assert _flat(t("pdf_key_title")) in flat and "2026-12-0313:00" in flat
    assert "α=0,812" in flat and "α=0,938" in flat and "4,41" in flat      # Indonesian decimals
    key[0]["alpha"] = 0.5
    _, text2 = _pdf_text(lesson_pdf.lesson_pdf(t, lesson, "", key, "Gemma 3 270M", "2026-12-03 13:00"))
    assert "α=0,500" in _flat(text2) and "α=0,812" not in _flat(text2)


class _Override:
    """Texts with some keys replaced (to put chosen characters into the PDF)."""

    def __init__(self, t, extra):
        self._t, self._extra, self.lang = t, extra, t.lang

    def __call__(self, key, **kw):
        return self._extra[key] if key in self._extra else self._t(key, **kw)

    def get(self, key, default=""):
        return self._extra.get(key) or self._t.get(key, default)

    def num(self, *a, **k):
        return self._t.num(*a, **k)


def _fill(lesson, t):
    """Placeholder values for every answer template of `lesson` (names from the templates)."""
    import string

    out = []
    for n in range(1, len(lesson.steps) + 1):
        names = {f.split(":")[0] for _, f, _, _ in string.Formatter().parse(t.get(f"{lesson.key(n)}_answer")) if f}
        out.append({k: 1 for k in names})
    return out
