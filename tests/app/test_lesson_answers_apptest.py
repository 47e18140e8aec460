"""A lesson step's answer is the number its page shows when the step opens it (issue 33:
life-of-a-token opened from decoding step 1 applied the page's default −3 bias on " Paris",
which the answer left out, so "15 tokens" was not what the page showed)."""
import re

import pytest

from lib.concepts.lessons.answers import answer
from lib.concepts.lessons.catalog import LESSONS
from lib.ui.i18n import load_texts
from tests.app.open_page import all_text, open_page

pytestmark = pytest.mark.real_model


def test_pipeline_step_answer_is_what_life_of_a_token_shows(real_model):
    step = next(s for x in LESSONS for s in x.steps if s.answer == "pipeline_kept")
    params = dict(step.params)
    at = open_page(step.slug, {**params, "reveal": "1"})
    assert not at.exception, [e.value for e in at.exception]
    body = all_text(at)
    top_p = load_texts(step.slug)["en"]["st_top_p"].split("{")[0].strip()     # "top-p" stage name
    line = next(m.value for m in at.markdown if "→" in m.value and top_p in m.value)
    shown = int(re.findall(r"([\d,]+) allowed", line)[-1].replace(",", ""))    # the last stage: top-p
    want = answer(real_model, step.answer, tuple(sorted(params.items())))["n"]
    assert shown == want, (line, want)
    assert load_texts(step.slug)["en"]["bias_none"].split("{")[0][:20] in body     # the step opens it unbiased
