"""Lessons in the UI: step links, the worksheet, and the live answer key.

The lesson data is lib/concepts/lessons/catalog.py; each step's answer is computed by
lib/concepts/lessons/answers.py through `runtime.cached` (once per model and preset, shared by
every visitor) and only when a teacher asks for the key (`answer_key`, with progress)."""
from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Callable

from lib.concepts.lessons import answers
from lib.concepts.lessons.catalog import Lesson, Step
from lib.serving import memo
from lib.ui import runtime
from lib.ui.glossary import page_title, page_url
from lib.ui.i18n import Texts, load_texts

LESSON_PARAM, STEP_PARAM = "lesson", "step"


def lesson_url(lesson_id: str, n: int, lang: str) -> str:
    """`/lessons?lesson=<id>&step=<n>` (+ `lang=id`): the link to one step."""
    return page_url("lessons", {LESSON_PARAM: lesson_id, STEP_PARAM: n}, lang)


def step_url(step: Step, lang: str) -> str:
    """The step's page in its preset state, in `lang`: the same state (prompt included) in every
    language, so a projector in English and a phone in Indonesian show the same numbers."""
    return page_url(step.slug, dict(step.params), lang)


def step_query(step: Step, lang: str) -> str:
    """The query string of `step_url` (what a visitor sends to open the step's page)."""
    url = step_url(step, lang)
    return url.split("?", 1)[1] if "?" in url else ""


def step_title(t: Texts, lesson: Lesson, n: int) -> str:
    """Step n's own title (lessons.toml `<lesson>_<n>_title`, filled with the step's URL state),
    so that two steps on the same page read differently and no header repeats the page name."""
    return t(f"{lesson.key(n)}_title", **dict(lesson.steps[n - 1].params))


def step_question(t: Texts, lesson: Lesson, n: int) -> str:
    """Step n's question (`<key>_q`), filled with the step's URL state (the prompt it opens with)."""
    return t(f"{lesson.key(n)}_q", **dict(lesson.steps[n - 1].params))


def step_text(t: Texts, lesson: Lesson, n: int, part: str) -> str:
    """Step n's `notice` text (lessons.toml `<key>_<part>`; "" when it has none)."""
    return t.get(f"{lesson.key(n)}_{part}")


def answer_params(step: Step, lang: str) -> tuple[tuple[str, str], ...]:
    """The preset parameters with the page's own default texts filled in (in `lang`; they are
    the same in both, tests/unit/test_same_defaults.py), i.e. exactly the state the page shows
    when opened from the step's link."""
    params = dict(step.params)
    for name, text_file, key in step.text_defaults:
        params.setdefault(name, load_texts(text_file)[lang][key])
    return tuple(sorted(params.items()))


def answer_key(lesson: Lesson, lang: str, on_step: Callable[[int, Step], None] | None = None) -> tuple[list[dict], float]:
    """Every step's answer values, computed on this session's model (cached), and the seconds
    it took. `on_step(i, step)` is called before step i (0-based) for a progress bar."""
    m = runtime.model()
    t0 = time.perf_counter()
    out = []
    for i, step in enumerate(lesson.steps):
        if on_step:
            on_step(i, step)
        out.append(runtime.cached(answers.answer)(m, step.answer, answer_params(step, lang)))
    return out, time.perf_counter() - t0


def key_computed_at(used: list[memo.Used]) -> float:
    """When the oldest answer among this run's results (`memo.run_provenance()`) was computed
    (epoch seconds): a key loaded from the cache folder says so, not "now"."""
    times = [u.prov.computed_at for u in used if u.fn.endswith(".answer")]
    return min(times) if times else time.time()


def utc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M")


def answer_text(t: Texts, lesson: Lesson, n: int, values: dict) -> str:
    """The step's answer sentence (lessons.toml `<lesson>_<n>_answer`) filled with live values."""
    return t(f"{lesson.key(n)}_answer", **values)


def worksheet(t: Texts, lesson: Lesson, base_url: str = "", key: list[dict] | None = None,
              model_name: str = "", when: str = "") -> str:
    """The lesson as a Markdown worksheet: per step the page, its link, the question, room for
    a prediction and what to notice; with `key`, the teacher's answers after each step and a
    line saying on which model and when they were computed."""
    lang = t.lang
    lines = [f"# {t('ws_title', title=t(f'lesson_{lesson.id}_title'), m=lesson.minutes)}", "",
             f"*{t('ws_lab')}*", "", t(f"lesson_{lesson.id}_summary"), ""]
    if key is not None:
        when = when or utc(time.time())
        lines += [f"**{t('ws_teacher')}.** {t('ws_computed', model=model_name, when=when)}", ""]
    for n, step in enumerate(lesson.steps, 1):
        lines += [f"## {t('step_header', n=n, total=len(lesson.steps), title=step_title(t, lesson, n))}", "",
                  f"⏱️ {t('step_minutes', m=step.minutes)} · {t('ws_open')} “{page_title(step.slug, lang)}”: "
                  f"<{base_url}{step_url(step, lang)}>", "",
                  f"**{t('question')}.** {step_question(t, lesson, n)}", "", t("ws_prediction"), "",
                  f"**{t('notice')}.** {step_text(t, lesson, n, 'notice')}", ""]
        if key is not None:
            lines += [f"> **{t('answer_label')}:** {answer_text(t, lesson, n, key[n - 1])}", ""]
    return "\n".join(lines)
