"""Step-through controls for an algorithm that runs in steps 0..last (the schedulers of
paged-attention and chunked-prefill): ▶ play (one step every `play_every_s` seconds, stopping at
the last), ⏮ start, ◀ back, step ▶, and a slider. The step lives in the URL (`step`), so a
lecturer can link a class to step 7.

    step_through(page, last, t("step_label"), t("step_help"), render=draw_step)
    # draw_step(step) draws what the step shows; it reruns alone (a Streamlit fragment)

The page's own texts give the button labels: btn_play, play_help, btn_first, btn_back, btn_next.
"""
from __future__ import annotations

from typing import Callable

import streamlit as st


def step_through(page, last: int, label: str, help_text: str, render: Callable[[int], None],
                 play_every_s: float = 1.2) -> None:
    """Draw the controls, then `render(step)` for the chosen step (0 <= step <= last)."""
    t = page.t
    step_key = page.state._key("step")
    play_key, stop_key = f"{page.slug}.play", f"{page.slug}.stop_play"

    def go_to(value: int) -> None:
        st.session_state[step_key] = min(max(value, 0), last)

    if st.session_state.pop(stop_key, False):
        st.session_state[play_key] = False
    if st.session_state.get(step_key, 0) > max(last, 1):          # fewer steps after a control change
        st.session_state[step_key] = max(last, 1)
    st.toggle(t("btn_play"), key=play_key, help=t("play_help", s=play_every_s))

    @st.fragment(run_every=play_every_s if st.session_state.get(play_key) else None)
    def stepper(playing: bool) -> None:
        if playing:
            if st.session_state.get(step_key, 0) >= last:
                st.session_state[stop_key] = True
                st.rerun(scope="app")
            go_to(st.session_state.get(step_key, 0) + 1)
        step = min(page.state.number_slider("step", label, 0, max(last, 1), 0, help=help_text), last)
        b1, b2, b3, _ = st.columns([1, 1, 1, 3])
        b1.button(t("btn_first"), on_click=go_to, args=(0,), key=f"{page.slug}.first", width="stretch")
        b2.button(t("btn_back"), on_click=go_to, args=(step - 1,), key=f"{page.slug}.back", width="stretch",
                  disabled=step <= 0)
        b3.button(t("btn_next"), on_click=go_to, args=(step + 1,), key=f"{page.slug}.next", width="stretch",
                  disabled=step >= last)
        render(step)

    stepper(bool(st.session_state.get(play_key)))
