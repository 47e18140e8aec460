"""A lesson question states only numbers its step's link sets (issue 33): "Beam search keeps the
4 best …" must open the page with 4 beams, or the worksheet and the page disagree once a default
changes. Every number typed into a `<step>_q` text, in both languages (read in the language's
format), is one of the values of that step's URL state (fast: no model)."""
import re

import pytest

from lib.concepts.lessons.catalog import LESSONS
from lib.ui.i18n import load_texts

NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?![\w])")
MODEL_NAME = re.compile(r"Gemma 3 270M")          # the model's name, not a quantity


def typed_numbers(text: str, lang: str) -> list[float]:
    text = MODEL_NAME.sub(" ", re.sub(r"\{[^{}]*\}|`[^`]*`", " ", text))
    out = []
    for n in NUMBER.findall(text):
        n = n.replace(",", "") if lang == "en" else n.replace(".", "").replace(",", ".")
        out.append(float(n))
    return out


def state_values(step) -> set[float]:
    return {float(x) for _, v in step.params for x in re.findall(r"-?\d+(?:\.\d+)?", v)}


def test_numbers_are_read_as_the_language_writes_them():
    assert typed_numbers("top-k = 40 dan top-p = 0,9 pada 4.096 token", "id") == [40.0, 0.9, 4096.0]
    assert typed_numbers("Gemma 3 270M's cache at {n:,} tokens", "en") == []


@pytest.mark.parametrize("lesson", LESSONS, ids=[x.id for x in LESSONS])
@pytest.mark.parametrize("lang", ["en", "id"])
def test_a_question_states_only_its_step_s_url_state(lesson, lang):
    texts = load_texts("lessons")[lang]
    bad = []
    for n, step in enumerate(lesson.steps, 1):
        key = f"{lesson.key(n)}_q"
        allowed = state_values(step)
        for x in typed_numbers(texts[key], lang):
            if x not in allowed:
                bad.append(f"{key}: {x:g} is not in the step's URL state {dict(step.params)}")
    assert not bad, "\n".join(bad)
