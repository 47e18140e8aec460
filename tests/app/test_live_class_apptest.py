"""The live class's UI paths through AppTest (issue 30): a wrong code in both languages, the
presenter link (its secret leaves the URL, the page is published to the room), the count, the
reveal with the class's distribution, before/after mode and its summary on the lessons page.
Each test has its own SQLite file (LLM_LAB_CLASS_DB) and store."""
import pytest

import lib.classroom as classroom
from lib.ui.i18n import load_texts
from tests.app.open_page import all_text, open_page

pytestmark = pytest.mark.real_model
LIVE = load_texts("live_class")


@pytest.fixture()
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_LAB_CLASS_DB", f"sqlite:///{tmp_path / 'class.db'}")
    monkeypatch.setattr(classroom, "_store", None)
    yield classroom.store()
    classroom._store.close()
    classroom._store = None


@pytest.mark.parametrize("lang", ["en", "id"])
def test_a_wrong_code_says_so_and_the_app_works_on(store, lang):
    at = open_page(None, {"room": "ZZZZZZ", "lang": lang})
    assert not at.exception, [e.value for e in at.exception]
    assert any(LIVE[lang]["bad_code"].format(code="ZZZZZZ") == w.value for w in at.warning), \
        [w.value for w in at.warning]
    assert "room" not in at.query_params
    assert load_texts("home")[lang]["title"] in at.title[0].value


def _presenter(store, slug="temperature", extra=None):
    keys = store.create_room("en")
    params = {"room": keys.code, "key": keys.secret, **(extra or {})}
    at = open_page(slug, params)
    assert not at.exception, [e.value for e in at.exception]
    return keys, at


def test_the_presenter_link_publishes_the_page_and_keeps_no_secret_in_the_url(store):
    keys, at = _presenter(store)
    assert "key" not in at.query_params
    assert at.query_params.get("room") in (keys.code, [keys.code])
    assert at.toggle(key="present_toggle").value is True          # the presenter link presents
    view = store.room(keys.code)
    assert view.slug == "temperature"
    assert view.params.get("prompt") == load_texts("common")["en"]["default_prompt"]
    assert LIVE["en"]["answered"].format(n=0) in all_text(at)


def test_answers_are_counted_and_the_reveal_shows_the_distribution(store):
    keys, at = _presenter(store)
    options = ["same", "other"]
    for i, choice in enumerate(["same", "same", "other"]):
        store.answer(keys.code, f"s{i}", "temperature.top", choice, options)
    at.run()
    assert LIVE["en"]["answered"].format(n=3) in all_text(at)
    assert not store.room(keys.code).is_revealed("temperature.top")
    reveal = [b for b in at.button if b.key == "live-reveal-temperature.top-live"]
    reveal[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert store.room(keys.code).is_revealed("temperature.top")
    assert store.distribution(keys.code, "temperature.top") == {"same": 2, "other": 1}
    text = all_text(at)
    correct = store.room(keys.code).correct("temperature.top")
    label = load_texts("temperature")["en"][f"q_top_{correct}"]
    assert LIVE["en"]["class_right"].format(right={"same": 2, "other": 1}[correct], n=3, answer=label) in text
    at.button(key="live-reset-temperature.top").click().run()       # ask again: answers forgotten
    assert not at.exception, [e.value for e in at.exception]
    assert not store.room(keys.code).is_revealed("temperature.top")
    assert store.count(keys.code, "temperature.top") == 0
    assert LIVE["en"]["answered"].format(n=0) in all_text(at)


def test_before_after_mode_and_summary_on_the_lessons_page(store):
    keys, at = _presenter(store, "lessons", {"lesson": "decoding"})
    assert LIVE["en"]["summary_none"] in all_text(at)
    at.radio(key="live.phase_choice").set_value("pre").run()
    assert store.room(keys.code).params.get("_phase") == "pre"     # the students' phase follows
    options = ["same", "other"]
    for i, choice in enumerate(["same", "other", "other", "other"]):
        store.answer(keys.code, f"s{i}", "temperature.top", choice, options, phase="pre")
    store.reveal(keys.code, keys.secret, "temperature.top", "same", "pre", options)
    for i, choice in enumerate(["same", "same", "same", "other"]):
        store.answer(keys.code, f"s{i}", "temperature.top", choice, options, phase="post")
    store.reveal(keys.code, keys.secret, "temperature.top", "same", "post", options)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    table = [m.value for m in at.markdown if LIVE["en"]["col_gain"] in m.value][0]
    assert "| 4 | 25 % | 4 | 75 % | 0.67 |" in table                 # g = (0.75 - 0.25) / 0.75
    assert at.session_state["live.phase"] == "pre"


def test_a_student_answers_from_a_fragment_and_learns_when_the_class_ends(store):
    keys = store.create_room("en")
    store.set_page(keys.code, keys.secret, "temperature", {"prompt": "The capital of France is"})
    at = open_page("temperature", {"room": keys.code, "lang": "id"})
    assert not at.exception, [e.value for e in at.exception]
    radio = at.radio(key="live.answer.live.temperature.top")
    radio.set_value("other").run()
    assert not at.exception, [e.value for e in at.exception]
    assert store.count(keys.code, "temperature.top") == 1
    sid = at.query_params.get("s")
    sid = sid[0] if isinstance(sid, list) else sid
    assert sid and store.own_answer(keys.code, sid, "temperature.top") == "other"
    reloaded = open_page("temperature", {"room": keys.code, "lang": "id", "s": sid})   # the same tab, reloaded
    assert reloaded.radio(key="live.answer.live.temperature.top").value == "other"     # its answer kept
    reloaded.radio(key="live.answer.live.temperature.top").set_value("same").run()
    assert store.count(keys.code, "temperature.top") == 1                            # changed, not added
    assert store.own_answer(keys.code, sid, "temperature.top") == "same"
    assert any(LIVE["id"]["answer_sent"].split("**")[0].replace("✅", "").strip() in s.value for s in at.success), [s.value for s in at.success] + [w.value for w in at.warning]
    store.reveal(keys.code, keys.secret, "temperature.top", "same", options=["same", "other"])
    at.run()
    assert "live.answer.live.temperature.top" not in {r.key for r in at.radio}   # revealed
    store.reset(keys.code, keys.secret, "temperature.top")            # the lecturer asks again
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    again = at.radio(key="live.answer.live.temperature.top")
    assert again.value is None                                       # reopened, the old answer gone
    store.end(keys.code, keys.secret)
    at.run()
    assert any(LIVE["id"]["ended"] in w.value for w in at.warning), [w.value for w in at.warning]
    assert "room" not in at.query_params


def test_ending_the_class_deletes_the_room(store):
    keys, at = _presenter(store)
    at.button(key="live-end").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert store.room(keys.code) is None
    assert any(LIVE["en"]["ended"] in w.value for w in at.warning)


def test_explore_on_my_own_stops_counting_and_back_to_the_class_resumes(store):
    keys = store.create_room("en")
    store.set_page(keys.code, keys.secret, "temperature", {"prompt": "The capital of France is"})
    at = open_page("temperature", {"room": keys.code})
    at.button(key="live-explore").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert LIVE["en"]["exploring"] in all_text(at)
    keys_now = {r.key for r in at.radio}
    assert "temperature.predict.top" in keys_now                   # the page's own prediction again
    assert "live.answer.live.temperature.top" not in keys_now
    at.button(key="live-back").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert LIVE["en"]["following"] in all_text(at)
    assert "live.answer.live.temperature.top" in {r.key for r in at.radio}


def test_a_control_the_lecturer_moves_is_published_and_a_student_gets_it(store):
    keys, at = _presenter(store)
    version = store.room(keys.code).version
    at.slider(key="temperature.n").set_value(20).run()
    view = store.room(keys.code)
    assert view.params.get("n") == "20" and view.version > version
    st_at = open_page("temperature", {"room": keys.code})
    assert not st_at.exception, [e.value for e in st_at.exception]
    assert st_at.slider(key="temperature.n").value == 20                # the student follows the state


def test_a_student_already_showing_the_rooms_state_is_not_switched_again(store):
    """The lecturer republishing the state a student's page shows (a new version, the same page
    and parameters) must not rerun the student's page through a page switch (issue 30: 200
    phones' pages at once); a different state must. A switch forgets the page's widget keys
    (live_follow.go_to), so a sentinel key under the page's name tells the two apart."""
    keys = store.create_room("en")
    store.set_page(keys.code, keys.secret, "temperature", {})         # the page, its defaults implied
    at = open_page("temperature", {"room": keys.code})
    assert not at.exception, [e.value for e in at.exception]
    shown = dict(at.session_state["live.on_page"][1])
    at.session_state["temperature.sentinel"] = "kept"
    assert shown.get("prompt")                                        # the default prompt, spelled out
    store.set_page(keys.code, keys.secret, "temperature", shown)      # what it shows, new version
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["temperature.sentinel"] == "kept"
    store.set_page(keys.code, keys.secret, "temperature", dict(shown, prompt="The capital of Peru is"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "temperature.sentinel" not in at.session_state             # switched to the new state


def test_a_students_notice_and_checks_wait_for_the_lecturers_reveals(store):
    """They state and measure the answers (lib/ui/predict_reveal.py): on a student's phone too,
    they come only once the lecturer revealed every question of the page."""
    keys = store.create_room("en")
    store.set_page(keys.code, keys.secret, "temperature", {"prompt": "The capital of France is"})
    at = open_page("temperature", {"room": keys.code})
    locked = load_texts("common")["en"]["answer_first_checks"]
    assert locked in [c.value for c in at.caption]
    store.reveal(keys.code, keys.secret, "temperature.top", "same", options=["same", "other"])
    at.run()
    assert locked in [c.value for c in at.caption]                   # one of two revealed
    store.reveal(keys.code, keys.secret, "temperature.entropy", "higher", options=["higher", "lower"])
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert locked not in [c.value for c in at.caption]
    assert [m.value for m in at.markdown if "🔎" in m.value]          # the checks panel
