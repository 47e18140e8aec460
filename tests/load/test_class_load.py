"""A class on one fresh server (issue 12): 24 real websocket sessions at once over 12 pages,
right after the server answers its health check (the moment the lazy-import race crashed 21 of
30 sessions), must all finish without an exception element; then the same pages again, now
shared, must agree with each other."""
from __future__ import annotations

import pytest

from bench.classroom import PeakRss, free_port, start_server, stop_server
from lib.concepts.catalog import CONCEPTS
from bench.visitor import class_of

pytestmark = [pytest.mark.load, pytest.mark.real_model]
PAGES = [c.slug for c in CONCEPTS if c.exists][:12]
SESSIONS = 24


@pytest.fixture(scope="module")
def fresh_server():
    proc, url = start_server(free_port())
    rss = PeakRss(proc.pid)
    yield url
    print(f"server + children peak RSS: {rss.stop():.0f} MB")
    stop_server(proc)


def test_a_class_at_once_on_a_fresh_server_crashes_nobody(fresh_server):
    assert len(PAGES) >= 8
    visits = [(PAGES[i % len(PAGES)], "lang=id" if i % 3 == 2 else "") for i in range(SESSIONS)]
    out = class_of(fresh_server, visits, timeout_s=1800)
    bad = [(v.page, v.query, v.failure, v.exceptions[:1], v.page_not_found) for v in out if v.crashed]
    assert not bad, bad
    assert all(v.elements > 10 for v in out)


def test_identical_sessions_see_identical_pages(fresh_server):
    out = class_of(fresh_server, [("temperature", "T=0.7")] * 6, timeout_s=1800, keep_texts=True)
    assert not [v for v in out if v.crashed]
    assert len(out[0].texts) > 5 and all(v.texts == out[0].texts for v in out)


def test_a_timing_page_asks_its_question_before_it_measures(fresh_server):
    """Issue 29: speculative-speed's question needs its timings for its answer, so it is asked
    (with its radio) only after them; meanwhile the page states the question above its progress
    bar, so a student thinks about it during the wait. A prompt no run has timed (in Indonesian:
    the English texts are the same code): the note arrives before the verdict, and no bar is left."""
    import urllib.parse

    from bench.classroom import RUN_TAG
    from lib.ui.i18n import load_texts

    texts, common = load_texts("speculative-speed")["id"], load_texts("common")["id"]
    question = texts["q_winner"].format(w=texts["work_prompt"])
    query = urllib.parse.urlencode({"lang": "id", "reveal": 1, "work": "prompt", "n": 8, "gammas": 2,
                                    "prompt": f"{RUN_TAG} Pada suatu hari, di sebuah desa kecil"})
    v = class_of(fresh_server, [("speculative-speed", query)], timeout_s=1800, keep_texts=True, until_complete=True)[0]
    assert not v.crashed and v.progress_left == 0, (v.failure, v.exceptions)
    ahead = [i for i, x in enumerate(v.texts) if x == common["predict_ahead"].format(q=question)]
    verdict = [i for i, x in enumerate(v.texts) if x.startswith(texts["verdict_dont"].split("{")[0])]
    assert ahead and verdict and ahead[0] < verdict[0], v.texts[:8]
