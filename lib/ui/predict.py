"""Predict, then reveal: a question before the figure that answers it (teaching mode).

The visitor chooses an option or clicks "Show me"; the feedback says whether the guess was right
and why. The choice lives in session state under `<slug>.predict.<name>`. A live class asks
through lib/ui/live_predict.py instead; `ConceptPage.predict` picks."""
from __future__ import annotations

import streamlit as st


def ask(page, name: str, question: str, options: list, answer, why: str, format_func=str) -> bool:
    """Ask `question` in st.container(key="predict-<name>"); True once answered or shown (or
    `page.reveal_all`, from `?reveal=1`), with the feedback under it."""
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

