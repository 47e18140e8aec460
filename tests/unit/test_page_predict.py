"""A question that hides its figure counts as the page's first answer to a change (fast: a bare
AppTest script, no model): until it is answered the page draws no Plotly chart (logit-bias draws
none at all before), and counted blank it held every measurement back and queued its later
computations beside blank pages' first ones, 24 s of them in a class (2026-12-06)."""
from streamlit.testing.v1 import AppTest


def _script():
    import streamlit as st

    from lib.serving import memo
    from lib.ui.page import ConceptPage

    memo.begin_run()
    page = ConceptPage("temperature")
    before = memo._run.drawn[0]
    shown = page.predict("top", "Which token?", ("same", "other"), "same", "because")
    st.session_state["seen"] = (before, memo._run.drawn[0], shown)


def test_an_open_question_counts_as_drawn():
    at = AppTest.from_function(_script, default_timeout=120).run()
    assert not at.exception
    assert at.session_state["seen"] == (0, 1, False)


def test_a_revealed_question_leaves_the_count_to_its_figures():
    at = AppTest.from_function(_script, default_timeout=120)
    at.query_params["reveal"] = "1"
    at.run()
    assert not at.exception
    assert at.session_state["seen"] == (0, 0, True)
