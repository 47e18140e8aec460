"""Glossary (issue 14 §5): every term with its definition and the pages that use it.
Texts: assets/text/glossary.toml; the term list and links: lib/ui/glossary.py."""
import streamlit as st

from lib.ui import glossary
from lib.ui.page import ConceptPage

page = ConceptPage("glossary", icon="📖")
t, lang = page.t, page.t.lang

query = page.state.text("q", t("search_label"), "", max_chars=60, area=False, help=t("search_help")).strip()
terms = glossary.sorted_terms(lang)
if query:
    q = query.lower()
    terms = [x for x in terms if q in glossary.term(x.key, lang).lower() or q in glossary.definition(x.key, lang).lower()
             or q in glossary.term(x.key, "en").lower()]
st.caption(t("count", n=len(terms), total=len(glossary.TERMS)))
if not terms:
    st.info(t("none_found", q=query))

for x in terms:
    english = glossary.english_beside(x.key, lang)   # Indonesian courses use both terms
    st.subheader(glossary.term(x.key, lang) + (f" · :gray[{english}]" if english else ""), anchor=x.anchor)
    st.markdown(glossary.definition(x.key, lang))
    links = " · ".join(f"[{glossary.page_title(s, lang)}]({glossary.page_url(s, lang=lang)})" for s in x.pages)
    st.markdown(f"*{t('used_on')}* {links}")

st.divider()
st.subheader(t("table_title"), anchor="term-list")
st.caption(t("table_caption"))
rows = "\n".join(f"| {en} | {local} |" for _, en, local in glossary.term_list())
st.markdown(f"| {t('col_en')} | {t('col_id')} |\n|---|---|\n{rows}")
page.finish()
