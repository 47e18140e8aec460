"""Predict, then reveal: nothing on a page settles its question before the visitor answers.

"What to notice" and "Check it yourself" state or measure the answers, so they wait until every
question of the run is answered or shown (lib/ui/predict_reveal.py); result tables, captions and
figure titles that give an answer away are drawn behind the question they answer."""
import re

import pytest

from lib.ui.i18n import load_texts
from tests.app.open_page import all_text, open_page

pytestmark = pytest.mark.real_model
COMMON = load_texts("common")["en"]


def shown_text(at) -> str:
    """Every text of the page, with the dataframes' column names (figure titles are markdown)."""
    columns = [str(c) for df in at.dataframe for c in df.value.columns]
    return all_text(at) + "\n" + "\n".join(columns)


def literal(slug: str, key: str) -> str:
    """The longest part of an English text between its placeholders: what the page writes verbatim."""
    part = max(re.split(r"\{[^}]*\}", load_texts(slug)["en"][key]), key=len).strip()
    assert len(part) >= 8, (slug, key, part)
    return part


def check_lines(at) -> list[str]:
    """The checks panel's lines (each names what it was compared against after a 🔎)."""
    return [m.value for m in at.markdown if "🔎" in m.value]


def test_notice_and_checks_wait_until_every_question_is_answered():
    at = open_page("temperature")
    assert not at.exception, [e.value for e in at.exception]
    locked = [c.value for c in at.caption if c.value in (COMMON["answer_first_notice"], COMMON["answer_first_checks"])]
    assert len(locked) == 2, locked
    assert not check_lines(at)
    headers = [s.value for s in at.subheader]
    assert COMMON["what_to_notice"] in headers and COMMON["check_it"] in headers   # the sections keep their place

    at.radio(key="temperature.predict.top").set_value("same").run()               # one of two answered
    assert not at.exception
    assert not check_lines(at)
    assert COMMON["answer_first_checks"] in [c.value for c in at.caption]

    at.radio(key="temperature.predict.entropy").set_value("lower").run()          # a wrong guess answers too
    assert not at.exception
    assert len(check_lines(at)) >= 3
    assert not [c.value for c in at.caption if c.value.startswith("🔒")]
    assert load_texts("temperature")["en"]["notice_1"] in all_text(at)


def test_show_me_unlocks_like_an_answer():
    at = open_page("gqa")
    for name in ("maps", "ratio"):
        at.button(key=f"gqa.predict.{name}.show").click().run()
        assert not at.exception, [e.value for e in at.exception]
    assert check_lines(at)


# (page, text keys of that page whose verbatim opening must not be on the page before the answer)
GIVEAWAYS = [
    ("stable-softmax", ("col_inf", "sweep_title", "window_line", "fp32_line")),
    ("beam-search", ("prob_title", "prob_fig_title")),
    ("top-k-top-p", ("sets_title", "order_caption", "spread_line", "gen_view")),
    ("logit-bias", ("col_top", "col_kept")),
    ("gqa", ("table_intro", "col_real", "col_formula")),
    ("temperature", ("fig_rank_title",)),
    ("life-of-a-token", ("fig_stages_title", "sample_text")),
    ("prefix-caching", ("time_fig_title",)),
    ("chunked-prefill", ("cpu_gpu", "fig_tl_title", "real_caption")),
    ("kv-quantization", ("fig_keys_caption", "kv_caption")),
    ("activation-outliers", ("ppl_caption", "col_top1")),
    ("attention-sinks", ("nll_title", "table_ppl", "measured_summary", "gen_caption")),
]


@pytest.mark.parametrize("slug,keys", GIVEAWAYS, ids=[g[0] for g in GIVEAWAYS])
def test_what_answers_the_question_is_drawn_only_after_the_answer(slug, keys):
    before = shown_text(open_page(slug))
    after = shown_text(open_page(slug, {"reveal": "1"}))
    for key in keys:
        text = literal(slug, key)
        assert text not in before, f"{slug}: {key} shown before the answer: {text!r}"
        assert text in after, f"{slug}: {key} missing after the answer: {text!r}"


def test_a_question_asked_after_a_long_run_once_answered_lets_the_page_draw_its_answer_early():
    """attention-sinks asks after its 4,096-token evaluation; its generations (the window
    alone's text collapses) wait for the answer, then come before the evaluation on every rerun
    (predict_reveal.answered_before)."""
    generations = literal("attention-sinks", "gen_caption")
    at = open_page("attention-sinks")
    assert generations not in shown_text(at)
    at.radio(key="attention-sinks.predict.sinks").set_value("window").run()     # a wrong guess
    assert not at.exception, [e.value for e in at.exception]
    assert generations in shown_text(at)
    assert not [c.value for c in at.caption if c.value.startswith("🔒")]
