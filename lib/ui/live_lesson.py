"""Before/after lessons in a live class (issue 30 §4), on the lessons page, for the lecturer.

How a lesson runs as before/after: the lecturer picks "Before" (the room's phase, published
with the page state: lib/ui/live_class.publish), walks through the lesson's steps — on each
page the class answers the predictions and the lecturer closes them, which records the model's
live answer without showing anything (lib/ui/live_predict.py) — teaches the lesson ("Live"),
then walks the steps again in "After". The summary here takes the questions of the lesson's
pages that were closed in either phase, in step order, with the answer recorded at the close,
and shows the store's lesson summary (share right before/after, g = (post - pre)/(1 - pre),
per question and pooled) and its CSV of anonymous counts."""
from __future__ import annotations

import streamlit as st

from lib.ui import live_class as live
from lib.ui.glossary import page_title
from lib.ui.i18n import texts

PHASES = ("live", "pre", "post")
CHOICE = "live.phase_choice"


def _set_phase() -> None:
    st.session_state[live.S_PHASE] = st.session_state[CHOICE]


def lesson_questions(view, slugs: list[str]) -> dict[str, str]:
    """question id -> the answer recorded when it was closed (the "post" one when both exist),
    for the questions of pages `slugs` closed before or after, in the order of `slugs`."""
    closed = {}
    for (q, phase), correct in view.reveals.items():
        if phase in ("pre", "post") and (q not in closed or phase == "post"):
            closed[q] = correct
    out = {}
    for slug in dict.fromkeys(slugs):
        for q in closed:
            if q.split(".", 1)[0] == slug:
                out[q] = closed[q]
    return out


def _pct(t, share) -> str:
    return t("gain_undefined") if share is None else f"{t.num(100 * share, '.0f')} %"


def _row(t, label: str, g) -> str:
    gain = t("gain_undefined") if g.gain is None else t.num(g.gain, ".2f")
    return f"| {label} | {g.pre_n} | {_pct(t, g.pre)} | {g.post_n} | {_pct(t, g.post)} | {gain} |"


def panel(lesson) -> None:
    """The lesson mode and the before/after summary (only for the lecturer of a class)."""
    if not live.is_presenter():
        return
    t = texts("live_class")
    st.subheader(f"🎓 {t('summary_title')}")
    # the widget's own key is dropped when the lessons page is left; the phase must stay
    st.session_state[CHOICE] = st.session_state.get(live.S_PHASE, "live")
    st.radio(t("phase_label"), PHASES, key=CHOICE, format_func=lambda p: t(f"phase_{p}"),
             horizontal=True, help=t("phase_help"), on_change=_set_phase)
    view = live.room_view()
    if view is None:
        return
    questions = lesson_questions(view, [s.slug for s in lesson.steps])
    if not questions:
        st.caption(t("summary_none"))
        return
    code, key = live.room_code(), live.secret()
    summary = live.store().lesson_summary(code, key, questions)
    st.caption(t("summary_caption"))
    head = (f"| {t('col_question')} | {t('col_n_pre')} | {t('col_pre')} | {t('col_n_post')} | "
            f"{t('col_post')} | {t('col_gain')} |\n|---|---:|---:|---:|---:|---:|")
    rows = [_row(t, f"{page_title(g.question.split('.', 1)[0])} · {g.question.split('.', 1)[1]}", g)
            for g in summary.questions]
    st.markdown("\n".join([head, *rows, _row(t, f"**{t('overall')}**", summary.overall)]))
    st.download_button(t("download_summary"), live.store().summary_csv(code, key, questions),
                       f"class-{code}-{lesson.id}-before-after.csv", "text/csv", icon="📊",
                       key="live-summary-csv")
    names = live.store().nicknames(code, key)
    if names:
        with st.expander(t("nicknames", n=len(names))):
            st.markdown(", ".join(names))
