"""Home: what the app is, how to use it in class, the map of all concepts, the model's facts."""
import streamlit as st

from lib.ui import runtime
from lib.concepts.catalog import CONCEPTS, GROUPS
from lib.model.facts import model_facts
from lib.ui.boot import leave_pages_folder_mode
from lib.ui.i18n import texts

leave_pages_folder_mode()
t, c = texts("home"), texts("common")
st.title(f"🧪 {t('title')}")
st.markdown(t("intro"))

st.subheader(t("howto_title"))
st.markdown(t("howto"))

st.subheader(t("map_title"))
cols = st.columns(len(GROUPS))
for col, group in zip(cols, GROUPS):
    col.markdown(f"**{c(f'group_{group}')}**")
    for x in CONCEPTS:
        if x.group != group:
            continue
        label = f"{x.number}. {c(f'concept_{x.slug}')}"
        if x.exists:
            col.page_link(str(x.page_file), label=label, icon=x.icon)
        else:
            col.markdown(f"{x.icon} {label} · _{t('not_yet')}_")

st.subheader(t("facts_title"))
m = runtime.model()
st.caption(t("facts_intro"))
rows = "\n".join(f"| {t(k)} | {v} |" for k, v in model_facts(m, t).items())
st.markdown(f"| | |\n|---|---|\n{rows}")
if m.source == "bundled":
    st.info(t("quant_note"))
st.caption(t("terms"))
