"""Predict, then reveal: the question box of a page, and the sections held back until it is
answered.

A page asks 1-2 questions whose answers come from this run (`ConceptPage.predict`). Until the
visitor answers or clicks "Show me" (in a live class: until the lecturer reveals), nothing on the
page may settle the question: the page draws its answering figures only when `predict` returns
True, and the sections that state, measure or foretell every answer ("What to notice", "Check
it yourself", "Try this" with its expected results) wait in a `HeldBack` place until the end of
the run, when it is known whether any question is still open (a page may draw them before it
asks, e.g. while it measures).
"""
from __future__ import annotations

import streamlit as st


def ask(page, name: str, question: str, options: list, answer, why: str, format_func=str) -> bool:
    """The question in st.container(key="predict-<name>"), answered with a radio; True once
    answered or shown (or `?reveal=1`), with feedback that says whether the guess was right and `why`."""
    box = st.container(key=f"predict-{name}", border=True)
    box.markdown(f"**🤔 {page.c('predict_title')}** {question}")
    key = f"{page.slug}.predict.{name}"
    guess = box.radio(page.c("predict_label"), options, index=None, key=key, format_func=format_func,
                      horizontal=True, label_visibility="collapsed")
    shown = st.session_state.get(key + ".shown", False) or page.reveal_all
    if guess is None and not shown:
        # a callback, not the button's return value: it survives the rerun that leaves
        # Streamlit's pages-folder mode (lib/ui/boot.py) and AppTest sees it too
        box.button(page.c("predict_show"), key=key + ".show", on_click=st.session_state.__setitem__,
                   args=(key + ".shown", True))
        box.caption(page.c("predict_hidden"))
        return False
    if guess is None:
        box.info(page.c("predict_answer", answer=format_func(answer)) + " " + why)
    elif guess == answer:
        box.success(page.c("predict_right", answer=format_func(answer)) + " " + why)
    else:
        box.error(page.c("predict_wrong", answer=format_func(answer)) + " " + why)
    return True


def answered_before(page, name: str) -> bool:
    """Whether question `name` is already answered or shown in this session (or `?reveal=1`),
    before the page asks it again in this run: a page that asks late (after a long measurement)
    may then draw what answers it early. In a live class: never (the lecturer reveals)."""
    from lib.ui import live_class

    if live_class.is_presenter() or live_class.is_following():
        return False
    key = f"{page.slug}.predict.{name}"
    return page.reveal_all or st.session_state.get(key) is not None or st.session_state.get(key + ".shown", False)


class HeldBack:
    """Places on the page kept for sections that give the answers away, filled in by `release`."""

    def __init__(self):
        self.open: list[str] = []          # this run's questions not yet answered or shown
        self._places: list = []            # (container, text shown while a question is open, draw)

    def hold(self, locked_text: str, draw) -> None:
        """Keep a place here for `draw()`; `release` fills it."""
        self._places.append((st.container(), locked_text, draw))

    def release(self) -> None:
        """Fill every kept place: `draw()` if no question of the run is open, else its locked text."""
        for box, locked_text, draw in self._places:
            with box:
                if self.open:
                    st.caption(locked_text)
                else:
                    draw()
        self._places = []
