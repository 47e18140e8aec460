"""lib.classroom.ClassStore on SQLite and on PostgreSQL: the same tests, over the `db_url`
fixture. The PostgreSQL half (marked `postgres`) starts a throwaway cluster from the machine's
binaries (tests/postgres.py) and FAILS, saying what to install, when there are none."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import func, select

from lib.classroom import ALPHABET, AnswerClosed, ClassStore, Forbidden, InvalidAnswer, \
    NotRevealed, RateLimited, UnknownRoom
from lib.classroom.models import Answer, Reveal, Room
from lib.classroom.rate_limit import TokenBucket
from tests import postgres

ROOT = Path(__file__).resolve().parents[2]
OPTS = ["Paris", "Lyon", "Nice"]


@pytest.fixture(scope="session")
def pg_server():
    if postgres.bindir() is None:
        pytest.fail(postgres.INSTALL_HINT, pytrace=False)
    with postgres.cluster() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    """A fresh, empty database: a SQLite file, or a new schema in the throwaway cluster (its
    URL sets search_path to it; a schema is made much faster than a database)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/classroom.db"
    import psycopg

    server = request.getfixturevalue("pg_server")
    name = "t" + uuid.uuid4().hex[:12]
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return f"{server}?options=-csearch_path%3D{name}"


class Clock:
    def __init__(self):
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(db_url, clock):
    s = ClassStore(db_url, clock=clock)
    yield s
    s.close()


def rows(store: ClassStore, table, code: str) -> int:
    with store._read() as s:
        return s.scalar(select(func.count()).select_from(table).where(table.room_code == code))


def test_codes_are_unique_from_the_alphabet_and_case_insensitive(store):
    keys = [store.create_room("en") for _ in range(60)]
    assert len({k.code for k in keys}) == 60 and len({k.secret for k in keys}) == 60
    assert all(len(k.code) == 6 and set(k.code) <= set(ALPHABET) for k in keys)
    v = store.room(f"  {keys[0].code.lower()[:3]} {keys[0].code.lower()[3:]} ")
    assert v is not None and v.code == keys[0].code and v.version == 0 and v.slug is None
    assert store.room("ZZZZZZ" if keys[0].code != "ZZZZZZ" else "YYYYYY") is None
    assert store.room("not a code") is None and store.room(None) is None
    with store._read() as s:                       # the secret itself is stored nowhere
        assert keys[0].secret not in repr(s.scalars(select(Room.secret_hash)).all())


def test_the_lecturer_moves_and_students_see_it(store):
    k = store.create_room("id")
    assert store.set_page(k.code, k.secret, "attention", {"prompt": "Ibu kota", "t": "0,5"}) == 1
    v = store.room(k.code)
    assert (v.slug, dict(v.params), v.version, v.lang) == (
        "attention", {"prompt": "Ibu kota", "t": "0,5"}, 1, "id")
    assert store.reveal(k.code, k.secret, "q", "Paris") == 2
    assert store.room(k.code).revealed == {"q"} and store.room(k.code).correct("q") == "Paris"
    assert store.reset(k.code, k.secret) == 3 and store.room(k.code).revealed == frozenset()


def test_every_presenter_call_needs_the_right_secret(store):
    k, other = store.create_room(), store.create_room()
    store.answer(k.code, "s1", "q", "Paris", OPTS, nickname="Ana")
    calls = [lambda s: store.set_page(k.code, s, "attention", {}),
             lambda s: store.reveal(k.code, s, "q", "Paris"),
             lambda s: store.reset(k.code, s),
             lambda s: store.reset(k.code, s, "q"),
             lambda s: store.end(k.code, s),
             lambda s: store.answers_so_far(k.code, s, "q"),
             lambda s: store.nicknames(k.code, s),
             lambda s: store.lesson_summary(k.code, s, {"q": "Paris"}),
             lambda s: store.summary_csv(k.code, s, {"q": "Paris"})]
    for call in calls:
        for wrong in (other.secret, k.secret[:-1], "", None, k.secret + " "):
            with pytest.raises(Forbidden):
                call(wrong)
    v = store.room(k.code)
    assert v is not None and v.version == 0 and v.slug is None and not v.reveals
    assert store.count(k.code, "q") == 1
    assert store.answers_so_far(k.code, k.secret, "q") == 1
    assert store.nicknames(k.code, k.secret) == ["Ana"]
    with pytest.raises(Forbidden):                 # another room's presenter holds no rights here
        store.nicknames(other.code, k.secret)


def test_invalid_answers_are_refused(store):
    k = store.create_room()
    for bad in [dict(option="Rome"), dict(option="Paris", phase="later"),
                dict(option="Paris", question=""), dict(option="Paris", session_id=""),
                dict(option="P", options="Paris")]:
        args = dict(code=k.code, session_id="s1", question="q", options=OPTS) | bad
        with pytest.raises(InvalidAnswer):
            store.answer(**args)
    assert store.count(k.code, "q") == 0
    with pytest.raises(UnknownRoom):
        store.answer("22222Z" if k.code != "22222Z" else "22222Y", "s1", "q", "Paris", OPTS)


def test_one_answer_per_session_changeable_until_the_reveal(store):
    k = store.create_room()
    store.answer(k.code, "s1", "q", "Lyon", OPTS)
    store.answer(k.code, "s1", "q", "Paris", OPTS)            # changed, not added
    store.answer(k.code, "s2", "q", "Nice", OPTS)
    store.answer(k.code, "s1", "q", "Nice", OPTS, phase="pre")  # another phase: its own row
    assert store.own_answer(k.code, "s1", "q") == "Paris"      # a reloaded tab finds its own
    assert store.own_answer(k.code, "s1", "q", "pre") == "Nice" and store.own_answer(k.code, "s9", "q") is None
    assert store.count(k.code, "q") == 2 and store.count(k.code, "q", "pre") == 1
    with pytest.raises(NotRevealed):                          # nobody sees answers before it
        store.distribution(k.code, "q")
    store.reveal(k.code, k.secret, "q", "Paris", options=OPTS)
    assert store.distribution(k.code, "q") == {"Paris": 1, "Lyon": 0, "Nice": 1}
    for session in ("s1", "s3"):
        with pytest.raises(AnswerClosed):
            store.answer(k.code, session, "q", "Lyon", OPTS)
    assert store.distribution(k.code, "q") == {"Paris": 1, "Lyon": 0, "Nice": 1}
    store.answer(k.code, "s1", "q", "Lyon", OPTS, phase="post")  # unrevealed phase stays open
    with pytest.raises(NotRevealed):
        store.distribution(k.code, "q", "pre")
    store.reset(k.code, k.secret, "q")                          # reopened, answers forgotten
    assert store.count(k.code, "q") == 0
    store.answer(k.code, "s3", "q", "Lyon", OPTS)
    assert store.count(k.code, "q") == 1


def test_rooms_do_not_see_each_other(store):
    a, b = store.create_room(), store.create_room()
    store.answer(a.code, "s1", "q", "Paris", OPTS)
    store.reveal(a.code, a.secret, "q", "Paris")
    assert store.count(b.code, "q") == 0
    with pytest.raises(NotRevealed):
        store.distribution(b.code, "q")


def test_end_deletes_the_room_and_its_answers(store):
    k, keep = store.create_room(), store.create_room()
    for i in range(5):
        store.answer(k.code, f"s{i}", "q", "Paris", OPTS, nickname=f"n{i}")
    store.answer(keep.code, "s0", "q", "Paris", OPTS)
    store.reveal(k.code, k.secret, "q", "Paris")
    store.end(k.code, k.secret)
    assert store.room(k.code) is None
    assert rows(store, Answer, k.code) == 0 and rows(store, Reveal, k.code) == 0
    with pytest.raises(UnknownRoom):
        store.count(k.code, "q")
    with pytest.raises(UnknownRoom):
        store.answer(k.code, "s9", "q", "Paris", OPTS)
    assert store.count(keep.code, "q") == 1


def test_rooms_expire_24_hours_after_their_last_activity(store, clock):
    old, busy = store.create_room(), store.create_room()
    store.answer(old.code, "s1", "q", "Paris", OPTS)
    clock.now += 23 * 3600
    store.answer(busy.code, "s1", "q", "Paris", OPTS)            # activity keeps it open
    clock.now += 3600 + 1
    assert store.room(old.code) is None and store.room(busy.code) is not None
    with pytest.raises(UnknownRoom):                           # gone before the purge runs
        store.set_page(old.code, old.secret, "attention")
    assert rows(store, Answer, old.code) == 1                  # ... and deleted by it
    assert store.purge_expired() == 1
    assert rows(store, Answer, old.code) == 0 and rows(store, Answer, busy.code) == 1
    clock.now += 24 * 3600 + 1
    assert store.purge_expired() == 1 and store.room(busy.code) is None


def test_nicknames_are_cleaned_and_for_the_lecturer_only(store):
    k = store.create_room()
    store.answer(k.code, "s1", "q", "Paris", OPTS, nickname="<img src=x onerror=alert(1)>")
    store.answer(k.code, "s2", "q", "Paris", OPTS, nickname="  Budi   Santoso  ")
    store.answer(k.code, "s3", "q", "Paris", OPTS, nickname="x" * 50)
    store.answer(k.code, "s4", "q", "Paris", OPTS)
    assert store.nicknames(k.code, k.secret) == ["Budi Santoso", "img srcx onerroraler",
                                                 "x" * 20]
    assert not any("nick" in f for f in type(store.room(k.code)).__dataclass_fields__)


def test_rate_limit_hits_the_flooder_only(db_url, clock):
    now = [0.0]
    store = ClassStore(db_url, clock=clock,
                       limiter=TokenBucket(capacity=5, per_seconds=10.0, clock=lambda: now[0]))
    k = store.create_room()
    for i in range(5):
        store.answer(k.code, "flood", f"q{i}", "Paris", OPTS)
    with pytest.raises(RateLimited):
        store.answer(k.code, "flood", "q5", "Paris", OPTS)
    store.answer(k.code, "calm", "q0", "Paris", OPTS)              # the others go on
    now[0] = 2.0
    store.answer(k.code, "flood", "q5", "Paris", OPTS)             # refilled: 1 per 2 s
    assert store.count(k.code, "q0") == 2 and store.count(k.code, "q5") == 1
    store.close()


def test_thirty_students_at_once_each_counted_exactly_once(store):
    k = store.create_room()
    go, errors = threading.Barrier(30), []

    def student(i: int) -> None:
        try:
            go.wait()
            store.answer(k.code, f"s{i}", "q", OPTS[i % 3], OPTS)
            store.answer(k.code, f"s{i}", "q", OPTS[(i + 1) % 3], OPTS)   # change of mind
            store.answer(k.code, f"s{i}", "q2", OPTS[0], OPTS)
        except Exception as e:                                            # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=student, args=(i,)) for i in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert store.count(k.code, "q") == 30 and store.count(k.code, "q2") == 30
    store.reveal(k.code, k.secret, "q", "Paris", options=OPTS)
    assert store.distribution(k.code, "q") == {o: 10 for o in OPTS}


def test_no_answer_slips_in_after_a_concurrent_reveal(store):
    k = store.create_room()
    acked: list[str] = []
    closed: list[str] = []
    go = threading.Barrier(21)

    def student(i: int) -> None:
        go.wait()
        time.sleep(0.002 * i)
        try:
            store.answer(k.code, f"s{i}", "q", "Paris", OPTS)
            acked.append(f"s{i}")
        except AnswerClosed:
            closed.append(f"s{i}")

    threads = [threading.Thread(target=student, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    go.wait()
    time.sleep(0.015)
    store.reveal(k.code, k.secret, "q", "Paris")
    for t in threads:
        t.join(60)
    assert len(acked) + len(closed) == 20
    assert store.distribution(k.code, "q") == {"Paris": len(acked)} or len(acked) == 0


def test_lesson_summary_from_pre_and_post_answers(store):
    k = store.create_room()
    for i in range(4):                                          # q1 right "Paris"
        store.answer(k.code, f"s{i}", "q1", "Paris" if i == 0 else "Lyon", OPTS, phase="pre")
        store.answer(k.code, f"s{i}", "q1", "Lyon" if i == 0 else "Paris", OPTS, phase="post")
        store.answer(k.code, f"s{i}", "q2", "Nice", OPTS, phase="pre")   # q2 right "Nice"
        store.answer(k.code, f"s{i}", "q2", "Nice", OPTS, phase="post")
    s = store.lesson_summary(k.code, k.secret, {"q1": "Paris", "q2": "Nice"})
    q1, q2 = s.questions
    assert (q1.pre, q1.post, round(q1.gain, 4)) == (0.25, 0.75, round(0.5 / 0.75, 4))
    assert q2.gain is None and q2.undefined == "pre_all_correct"
    assert (s.overall.pre, s.overall.post) == (5 / 8, 7 / 8)
    text = store.summary_csv(k.code, k.secret, {"q1": "Paris", "q2": "Nice"})
    assert text.splitlines()[1].startswith("q1,Paris,4,1,0.2500,4,3,0.7500,0.6667")
    assert "s0" not in text                                      # anonymous


CRASHER = """
import sys
from lib.classroom import ClassStore
from lib.classroom.rate_limit import TokenBucket
store = ClassStore(sys.argv[1], limiter=TokenBucket(capacity=10**6, per_seconds=1.0))
code = sys.argv[2]
for i in range(100000):
    store.answer(code, f"s{i}", "q", "Paris", ["Paris", "Lyon"])
    print(f"ack s{i}", flush=True)
"""


def test_a_killed_server_loses_no_acknowledged_answer(db_url, store):
    k = store.create_room()
    proc = subprocess.Popen([sys.executable, "-c", CRASHER, db_url, k.code], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True,
                            env=os.environ | {"PYTHONPATH": str(ROOT)})
    acked = []
    for line in proc.stdout:
        acked.append(line.split()[1])
        if len(acked) == 40:
            break
    proc.send_signal(signal.SIGKILL)                            # mid-stream, no clean shutdown
    proc.wait(30)
    acked += [line.split()[1] for line in proc.stdout if line.startswith("ack")]
    reopened = ClassStore(db_url)                               # the restarted server
    with reopened._read() as s:
        stored = set(s.scalars(select(Answer.session_id).where(Answer.room_code == k.code)))
    reopened.close()
    assert len(acked) >= 40 and set(acked) <= stored


def test_the_store_serves_polls_from_one_query_and_sees_its_writes_at_once(db_url):
    store, other = ClassStore(db_url), ClassStore(db_url)    # `other`: another replica or process
    try:
        k = store.create_room("en")
        before = store._views.loads
        views = [store.room(k.code.lower(), max_age_s=60) for _ in range(100)]
        assert store._views.loads == before + 1 and {v.version for v in views} == {0}
        store.set_page(k.code, k.secret, "temperature", {"t": "0.7"})
        v = store.room(k.code, max_age_s=60)
        assert (v.version, v.slug, dict(v.params)) == (1, "temperature", {"t": "0.7"})
        store.reveal(k.code, k.secret, "q", "Paris")
        assert store.room(k.code, max_age_s=60).correct("q") == "Paris"
        other.reset(k.code, k.secret)                         # another process's write
        assert store.room(k.code, max_age_s=60).correct("q") == "Paris"   # within max_age_s
        assert store.room(k.code).revealed == frozenset()     # max_age_s=0: read now
        assert store.room(k.code, max_age_s=1e-9).revealed == frozenset()
        store.end(k.code, k.secret)
        assert store.room(k.code, max_age_s=60) is None
        assert store.room("not a code", max_age_s=60) is None
    finally:
        store.close()
        other.close()
