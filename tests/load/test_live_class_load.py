"""A live class of thirty (issue 30 item 7) on a fresh server: 30 students join `?room=CODE`
over Streamlit's websocket protocol (bench/live_student.py) and answer the room's question
within the same 10 s, each by the answer radio's widget BackMsg (a fragment rerun, as the
browser sends it), while the lecturer's answer-count fragment polls as its browser does.
Every answer is counted exactly once (the store), each came back acknowledged ("answer sent")
within 0.5 s at p95, and the lecturer's count reached the acknowledged answers within 2 s
(p95).
One scenario of bench/live_class.py (no restart), ~40-60 s on 2 shared cores."""
from __future__ import annotations

import pytest

from bench import live_class
from bench.classroom import free_port

pytestmark = [pytest.mark.load, pytest.mark.real_model]
STUDENTS, WINDOW_S = 30, 10.0


@pytest.fixture(scope="module")
def thirty():
    return live_class.run(free_port(), STUDENTS, window_s=WINDOW_S, seed=3, restart=False)


def test_every_answer_of_thirty_is_counted_exactly_once(thirty):
    assert thirty["live_failed_joins"] == 0, thirty["live_errors"]
    assert thirty["live_sent"] == STUDENTS, thirty
    assert thirty["live_acked"] == STUDENTS, thirty["live_errors"]
    assert thirty["live_counted"] == STUDENTS, thirty


def test_answer_round_trip_and_presenter_count_are_fast(thirty):
    assert thirty["live_answer_p95_s"] <= 0.5, thirty
    assert thirty["live_presenter_lags_measured"] == STUDENTS, thirty
    # p95, not the max: on 2 cores shared with other work one count poll in 30 can queue
    # behind the page runs (max measured 3.7 s with the machine's load average at 8.4)
    assert thirty["live_presenter_lag_p95_s"] <= 2.0, thirty
