"""Predictions counted in a live class: page.predict's room mode (lib/ui/page.py calls
`predict` first; None means "not in a class, ask as usual").

Question id: `<slug>.<predict name>`; options go to the store as their str(); the phase is the
room's lesson mode ("live", or "pre"/"post" in a before/after lesson, lib/ui/live_lesson.py).

- A student answers in a fragment (`_student_answer`): choosing an option reruns the fragment
  only, the answer is sent in the radio's callback and acknowledged ("answer sent"); the class
  bar's poll (lib/ui/live_follow.py) reruns the page once the question is revealed (or, in a
  before/after phase, closed). After the reveal the student sees right/wrong against the
  answer the lecturer's page recorded, and how many in the class had it.
- The lecturer sees only the number of answers (a fragment refreshing every COUNT_S seconds)
  and a Reveal button (before/after: "Close the answers", nothing shown); after the reveal, the
  class's distribution as a bar chart (through page.figure) beside the model's live answer.
Returns True when the page should draw the figure that answers the question."""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from lib.classroom.errors import AnswerClosed, ClassroomError, RateLimited
from lib.ui import live_class as live
from lib.ui.i18n import texts

COUNT_S = 1.0      # the lecturer's count: polled every 1 s, so it is current within 2 s
S_REVEALED = "live.just_revealed"
LIVE, PHASE_PARAM = live.LIVE, live.PHASE_PARAM    # the lesson mode, published with the page state


def phase_of(view) -> str:
    return view.params.get(PHASE_PARAM, LIVE) if view is not None else LIVE


def predict(page, name: str, question: str, options: list, answer, why: str, format_func=str) -> bool | None:
    """page.predict in a room (see the module docstring); None when this session is in no
    room or explores on its own."""
    if not (live.is_presenter() or live.is_following()):
        return None
    view = live.room_view()
    if view is None:
        return None
    t = texts("live_class")
    qid, phase = f"{page.slug}.{name}", phase_of(view)
    codes = [str(o) for o in options]
    labels = {str(o): format_func(o) for o in options}
    box = st.container(key=f"predict-{name}", border=True)
    box.markdown(f"**🤔 {page.c('predict_title')}** {question}")
    if phase != LIVE:
        box.caption(t("phase_note"))
    closed = view.correct(qid, phase)
    if live.is_presenter():
        return _presenter(page, t, box, qid, phase, codes, labels, str(answer), closed, why)
    return _student(page, t, box, qid, phase, codes, labels, closed, why)


# ---- the lecturer -----------------------------------------------------------------------------
def _presenter(page, t, box, qid, phase, codes, labels, correct, closed, why) -> bool:
    if closed is None:
        box.markdown(" · ".join(f"**{labels[c]}**" for c in codes))
        with box:
            _presenter_count(qid, phase, codes, correct)
        return False
    if phase != LIVE:
        with box:
            _presenter_count(qid, phase, codes, correct)
        return False
    dist = live.store().distribution(live.room_code(), qid, phase)
    n = sum(dist.values())
    left, right = box.columns([3, 2], vertical_alignment="center")
    with right:
        st.info(page.c("predict_answer", answer=labels.get(closed, closed)) + " " + why)
        st.markdown(t("class_right", right=dist.get(closed, 0), n=n, answer=labels.get(closed, closed))
                    if n else t("no_answers"))
        st.button(t("reset"), key=f"live-reset-{qid}", help=t("reset_help"), icon="🔄",
                  on_click=_reset, args=(qid,))
    with left:
        page.figure(class_figure(t, dist, labels, closed), f"class-{qid.split('.', 1)[1]}",
                    data={t("fig_x"): [labels.get(o, o) for o in dist], t("fig_y"): list(dist.values())})
    return True


def _reset(qid: str) -> None:
    """Ask again: the store forgets the question's answers and reveal (every phase); the
    students' class bar poll (live_follow._poll_room) sees the room's new version and reopens it."""
    live.store().reset(live.room_code(), live.secret(), qid)


@st.fragment(run_every=COUNT_S)
def _presenter_count(qid: str, phase: str, codes: list[str], correct: str) -> None:
    """How many have answered (never what), and the button that reveals or closes."""
    t = texts("live_class")
    code, key = live.room_code(), live.secret()
    if code is None:
        return
    if st.session_state.pop(S_REVEALED, False):
        st.rerun(scope="app")                       # the page draws the answer's figure now
    try:
        n = live.store().answers_so_far(code, key, qid, phase)
    except ClassroomError:
        return
    view = live.store().room(code)
    done = view is not None and view.is_revealed(qid, phase)
    short = t(f"phase_{phase}_short") if phase != LIVE else ""
    a, b = st.columns([3, 2], vertical_alignment="center")
    a.markdown(t("answered_phase", n=n, phase=short) if short else t("answered", n=n))
    if done:
        b.caption(t("closed"))
        return
    label, help_ = (t("reveal"), t("reveal_help")) if phase == LIVE else (t("close"), t("close_help"))
    # a callback, not the return value: it survives the pages-folder-mode rerun (lib/ui/boot.py)
    b.button(label, key=f"live-reveal-{qid}-{phase}", help=help_, type="primary", icon="👁️",
             on_click=_reveal, args=(qid, phase, codes, correct))


def _reveal(qid: str, phase: str, codes: list[str], correct: str) -> None:
    live.store().reveal(live.room_code(), live.secret(), qid, correct, phase, options=codes)
    st.session_state[S_REVEALED] = True


def class_figure(t, dist: dict[str, int], labels: dict[str, str], correct: str) -> go.Figure:
    """The class's answers per option (the model's answer in green), counts on the bars."""
    xs = [("✓ " if o == correct else "") + labels.get(o, o) for o in dist]   # marked even at 0 answers
    colors = ["#2e7d32" if o == correct else "#9e9e9e" for o in dist]
    fig = go.Figure(go.Bar(x=xs, y=list(dist.values()), marker_color=colors, text=list(dist.values()),
                           textposition="outside", cliponaxis=False,
                           hovertemplate="%{x}: %{y}<extra></extra>"))
    fig.update_layout(title=t("fig_title", n=sum(dist.values()), answer=labels.get(correct, correct)),
                      xaxis_title=t("fig_x"), yaxis_title=t("fig_y"), height=380, showlegend=False,
                      yaxis=dict(rangemode="tozero", dtick=max(1, -(-max(dist.values(), default=1) // 8))))
    return fig


# ---- a student --------------------------------------------------------------------------------
def _radio_key(qid: str, phase: str) -> str:
    return f"live.answer.{phase}.{qid}"


def _student(page, t, box, qid, phase, codes, labels, closed, why) -> bool:
    key = _radio_key(qid, phase)
    if closed is None:
        with box:
            _student_answer(qid, phase, codes, labels)
        return False
    mine = st.session_state.get(key + ".sent")
    if phase != LIVE:
        box.caption(t("answer_closed") + (f" · **{labels.get(mine, mine)}**" if mine else ""))
        return False
    answer = labels.get(closed, closed)
    text = page.c("predict_answer", answer=answer) if mine is None else \
        page.c("predict_right" if mine == closed else "predict_wrong", answer=answer)
    (box.info if mine is None else box.success if mine == closed else box.error)(text + " " + why)
    st.session_state.setdefault(live.S_SHOWN, {})[qid] = key      # reopened by a reset
    dist = live.store().distribution(live.room_code(), qid, phase)
    n = sum(dist.values())
    if n:
        box.caption(t("class_right", right=dist.get(closed, 0), n=n, answer=answer))
    return True


def _send(qid: str, phase: str, codes: list[str], key: str) -> None:
    choice = st.session_state.get(key)
    st.session_state.pop(key + ".err", None)
    if choice is None:
        return
    try:
        live.store().answer(live.room_code(), live.session_id(), qid, choice, codes, phase, live.nickname())
        st.session_state[key + ".sent"] = choice
    except RateLimited:
        st.session_state[key + ".err"] = ("answer_slow", "")
    except AnswerClosed:
        st.session_state[key + ".err"] = ("answer_closed", "")
    except ClassroomError as e:
        st.session_state[key + ".err"] = ("answer_failed", type(e).__name__)


@st.fragment
def _student_answer(qid: str, phase: str, codes: list[str], labels: dict[str, str]) -> None:
    """The student's choice (sent on change: only this fragment reruns) and its
    acknowledgement. It does not poll: the class bar's poll (live_follow._poll_room) reruns the
    page when this question is revealed or closed (one poll per student, not two: 200 phones
    polling twice every 2 s kept two cores busy and the answers' p95 at 5.6 s)."""
    t = texts("live_class")
    code = live.room_code()
    if code is None:
        return
    view = live.store().room(code, max_age_s=live.VIEW_AGE_S)   # the store refuses a late answer
    if view is None or view.is_revealed(qid, phase):
        st.rerun(scope="app")
    st.session_state.setdefault(live.S_OPEN, {})[qid] = phase     # the class bar watches it
    key = _radio_key(qid, phase)
    if key + ".sent" not in st.session_state and not st.session_state.get(key + ".asked"):
        st.session_state[key + ".asked"] = True          # a reloaded tab: the answer it gave
        mine = live.store().own_answer(code, live.session_id(), qid, phase)
        if mine is not None:
            st.session_state[key + ".sent"] = mine
    if key not in st.session_state and key + ".sent" in st.session_state:
        st.session_state[key] = st.session_state[key + ".sent"]     # back on this page: keep it
    st.radio(t("answer_none"), codes, index=None, key=key, format_func=labels.get, horizontal=True,
             label_visibility="collapsed", on_change=_send, args=(qid, phase, codes, key))
    err = st.session_state.get(key + ".err")
    sent = st.session_state.get(key + ".sent")
    if err:
        st.warning(t(err[0], error=err[1]))
    elif sent is not None:
        st.success(t("answer_sent", answer=labels.get(sent, sent)))
    else:
        st.caption(t("answer_none"))
