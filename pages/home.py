"""Home: what the app is, how to use it in class, the map of all concepts, the model's facts."""
import streamlit as st

from lib.ui import runtime
from lib.concepts.catalog import CONCEPTS, HOME_COLUMNS, PAGES_DIR
from lib.concepts.lessons.catalog import LESSONS
from lib.model.facts import model_facts
from lib.ui.boot import leave_pages_folder_mode
from lib.ui.i18n import texts
from lib.ui.lessons import step_title

leave_pages_folder_mode(page=True)
t, c, c_lessons = texts("home"), texts("common"), texts("lessons")
st.title(f"🧪 {t('title')}")
st.markdown(t("intro"))

# ---- start with a lesson (issue 14 §4) -----------------------------------------------------
st.subheader(t("start_title"))
st.markdown(t("start_intro"))
for col, lesson in zip(st.columns(len(LESSONS)), LESSONS):
    with col.container(border=True):
        st.markdown(f"**{lesson.icon} {c_lessons(f'lesson_{lesson.id}_title')}**")
        st.caption(f"⏱️ {c_lessons('minutes_fmt', m=lesson.minutes)} · {c_lessons('steps_fmt', n=len(lesson.steps))}")
        # each step by its own title: two steps on one page (English, then Indonesian) read apart
        st.markdown("\n".join(f"{n}. {step_title(c_lessons, lesson, n)}" for n in range(1, len(lesson.steps) + 1)))
        st.page_link(str(PAGES_DIR / "lessons.py"), label=c_lessons("start"), icon="▶️",
                     query_params={"lesson": lesson.id, "step": 1})
c1, c2 = st.columns(2)
c1.page_link(str(PAGES_DIR / "life-of-a-token.py"), label=c("page_life-of-a-token"), icon="🧬")
c1.caption(t("life_blurb"))
c2.page_link(str(PAGES_DIR / "glossary.py"), label=c("page_glossary"), icon="📖")
c2.caption(t("glossary_blurb"))

st.subheader(t("howto_title"))
st.markdown(t("howto"))

# ---- every concept, full titles (three columns so no title is cut) -------------------------
st.subheader(t("map_title"))
for col, groups in zip(st.columns(len(HOME_COLUMNS)), HOME_COLUMNS):
    for group in groups:
        col.markdown(f"**{c(f'group_{group}')}**")
        for x in CONCEPTS:
            if x.group != group:
                continue
            label = f"{x.number}. {c(f'concept_{x.slug}')}"
            if x.exists:
                col.page_link(str(x.page_file), label=label, icon=x.icon, width="stretch")
            else:
                col.markdown(f"{x.icon} {label} · _{t('not_yet')}_")

st.subheader(t("facts_title"))
m = runtime.model()
st.caption(t("facts_intro"))
rows = "\n".join(f"| {t(k)} | {v} |" for k, v in model_facts(m, t, runtime.model_name(m)).items())
st.markdown(f"| | |\n|---|---|\n{rows}")
if m.source == "bundled":
    st.info(t("quant_note"))
st.caption(t("terms"))
