"""Lessons (issue 14 §4): curated paths through the pages, one step at a time, with a
worksheet and a live answer key. Data: lib/concepts/lessons/; UI helpers: lib/ui/lessons.py."""
import streamlit as st

from urllib.parse import parse_qsl

from lib.ui import estimate, lesson_pdf, lesson_prep, runtime
from lib.concepts.lessons.catalog import BY_ID, LESSONS
from lib.serving import memo
from lib.ui import lessons as ui
from lib.ui import live_lesson
from lib.ui.glossary import page_title
from lib.ui.page import ConceptPage

page = ConceptPage("lessons", icon="🎓")
t, lang = page.t, page.t.lang

# A link that names a lesson/step (home page, a shared URL, the path below) wins over this
# session's last state; a value this page wrote itself (Next/Back, the widgets) does not.
PUBLISHED = "lessons.published."
for name in (ui.LESSON_PARAM, ui.STEP_PARAM):
    raw = st.query_params.get(name)
    if raw is not None and raw != st.session_state.get(PUBLISHED + name, raw):
        st.session_state.pop(page.state._key(name), None)

# ---- overview -----------------------------------------------------------------------------
if not page.present:                     # on a projector the current step comes first
    st.subheader(t("overview_title"))
    for col, lesson in zip(st.columns(len(LESSONS)), LESSONS):
        with col.container(border=True):
            st.markdown(f"**{lesson.icon} {t(f'lesson_{lesson.id}_title')}**")
            st.caption(f"⏱️ {t('minutes_fmt', m=lesson.minutes)} · {t('steps_fmt', n=len(lesson.steps))}")
            st.markdown(t(f"lesson_{lesson.id}_summary"))
            st.markdown("\n".join(f"{n}. {ui.step_title(t, lesson, n)} ({t('step_minutes', m=s.minutes)})"
                                  for n, s in enumerate(lesson.steps, 1)))

    st.caption(t("same_prompts"))

lesson_id = page.state.select(ui.LESSON_PARAM, t("lesson_label"), tuple(BY_ID), LESSONS[0].id,
                              format_func=lambda i: f"{BY_ID[i].icon} {t(f'lesson_{i}_title')} "
                                                    f"({t('minutes_fmt', m=BY_ID[i].minutes)})",
                              radio=True, horizontal=True)
lesson = BY_ID[lesson_id]
total = len(lesson.steps)
step_key = page.state._key(ui.STEP_PARAM)


def move(delta: int) -> None:
    st.session_state[step_key] = min(max(int(st.session_state.get(step_key, 1)) + delta, 1), total)


if int(st.session_state.get(step_key, 1)) > total:       # switching to a shorter lesson
    st.session_state[step_key] = total
n = page.state.number_slider(ui.STEP_PARAM, t("step_label"), 1, total, 1)
step = lesson.steps[n - 1]
st.session_state[PUBLISHED + ui.LESSON_PARAM], st.session_state[PUBLISHED + ui.STEP_PARAM] = lesson_id, str(n)
title = page_title(step.slug, lang)

base = (st.context.url or "").split("/lessons")[0].rstrip("/")     # this server, for shareable links

# ---- the step -----------------------------------------------------------------------------
with st.container(border=True, key="lesson-step"):
    st.subheader(t("step_header", n=n, total=total, title=ui.step_title(t, lesson, n)))
    st.caption(f"⏱️ {t('step_minutes', m=step.minutes)}")
    st.markdown(f"**❓ {t('question')}**  \n{ui.step_question(t, lesson, n)}")
    st.link_button(t("open_page", page=title), ui.step_url(step, lang), type="primary", icon="🔗")
    cold = estimate.state_seconds(step.slug, dict(parse_qsl(ui.step_query(step, lang))))
    st.caption(t("open_caption") + ("" if cold is None else " " + t("step_estimate", s=cold)))
    ready_note = st.empty()             # filled below, after a preparation this run may do
    st.markdown(f"**👀 {t('notice')}**  \n{ui.step_text(t, lesson, n, 'notice')}")
    b1, b2, _ = st.columns([1, 1, 4])
    b1.button(t("back"), on_click=move, args=(-1,), disabled=n == 1, key="lesson-back")
    b2.button(t("next"), on_click=move, args=(1,), disabled=n == total, key="lesson-next")
    if not page.present:
        st.caption(t("link_here"))
        st.code(base + ui.lesson_url(lesson.id, n, lang), language=None)

st.subheader(t("path_title"))
st.markdown("\n".join(
    f"{i}. {'**' if i == n else ''}[{ui.step_title(t, lesson, i)}]({ui.lesson_url(lesson.id, i, lang)})"
    f"{'** ◀' if i == n else ''} ({t('step_minutes', m=lesson.steps[i - 1].minutes)}) — {ui.step_question(t, lesson, i)}"
    for i in range(1, total + 1)))
st.caption(t("plan_total", n=total, m=sum(s.minutes for s in lesson.steps)))

# ---- prepare the lesson: every step's page and answer computed now, before class ----------
if not page.present:
    # a callback, not the button's return value: the result must survive the reruns that follow
    asked_prep = st.session_state.setdefault("lessons.prepare_asked", set())
    st.button(t("prepare"), help=t("prepare_help"), icon="🚀", key="lesson-prepare",
              on_click=asked_prep.add, args=((lesson.id, lang),))
    done_all = st.session_state.setdefault("lessons.prepared", {})
    if (lesson.id, lang) in asked_prep:
        asked_prep.discard((lesson.id, lang))
        bar = st.progress(0.0)

        def preparing(i, s):
            bar.progress(i / total, text=t("preparing", n=i + 1, total=total, title=ui.step_title(t, lesson, i + 1)))

        done_all[(lesson.id, lang)] = lesson_prep.prepare(lesson, lang, preparing, no_server=t("no_server"))
        bar.empty()
    done = done_all.get((lesson.id, lang))
    if done is not None:
        if done.failed:
            st.warning(t("prepared_partly", s=done.seconds, bad=len(done.failed), n=total, why=done.failed[0][1]))
        else:
            st.success(t("prepared", s=done.seconds, n=total))
        st.dataframe({t("prep_col_step"): [ui.step_title(t, lesson, i) for i in range(1, total + 1)],
                      t("prep_col_page"): [page_title(s.slug, lang) for s in lesson.steps],
                      t("prep_col_s"): [t.num(x, ".1f") for x in done.step_seconds]},
                     hide_index=True)

ready = lesson_prep.prepared_at(lesson, lang)
if ready is not None:
    ready_note.caption(f"✅ {t('step_ready', when=ui.utc(ready)[-5:])}")

live_lesson.panel(lesson)               # a live class: before/after mode and its summary (issue 30)

# ---- worksheet and answer key (the key is computed only when asked for) -------------------
if not page.present:
    st.subheader(t("worksheet_title"))
    st.caption(t("worksheet_caption"))
    st.download_button(t("download_ws"), ui.worksheet(t, lesson, base), f"lesson-{lesson.id}-{lang}.md",
                       "text/markdown", icon="📝", key="ws-download")
    st.caption(t("pdf_caption"))
    st.download_button(t("download_pdf"), lambda: lesson_pdf.lesson_pdf_cached(t, lesson, base),
                       f"lesson-{lesson.id}-{lang}.pdf", "application/pdf", icon="🖨️", key="ws-pdf",
                       on_click="ignore")
    asked = st.session_state.setdefault("lessons.key_for", set())
    st.button(t("compute_key"), help=t("compute_help"), icon="🔑", key="key-compute",
              on_click=asked.add, args=((lesson.id, lang),))
    if (lesson.id, lang) in asked:
        bar = st.progress(0.0)

        def progress(i, s):
            bar.progress(i / total, text=t("computing", n=i + 1, total=total, title=ui.step_title(t, lesson, i + 1)))

        key, seconds = ui.answer_key(lesson, lang, progress)
        bar.empty()
        m = page.model()
        when = ui.utc(ui.key_computed_at(memo.run_provenance()))
        st.success(t("key_done", model=runtime.model_name(m), s=seconds))
        for i, values in enumerate(key, 1):
            st.markdown(f"**{i}. {ui.step_title(t, lesson, i)}** — {ui.answer_text(t, lesson, i, values)}")
        st.download_button(t("download_key"), ui.worksheet(t, lesson, base, key, runtime.model_name(m), when),
                           f"lesson-{lesson.id}-{lang}-answer-key.md", "text/markdown", icon="🔑", key="key-download")
        st.download_button(t("download_key_pdf"),
                           lambda: lesson_pdf.lesson_pdf_cached(t, lesson, base, key, runtime.model_name(m), when),
                           f"lesson-{lesson.id}-{lang}-answer-key.pdf", "application/pdf", icon="🖨️",
                           key="key-pdf", on_click="ignore")
page.finish()
