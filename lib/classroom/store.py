"""ClassStore: rooms, the page the lecturer projects, and the class's answers, in one database.

Contracts (every method; `code` is case-insensitive, surrounding/inner spaces ignored):
- A room that was never created, was ended, or saw no activity (lecturer move or answer) for
  TTL_S = 24 h is unknown: `room()` returns None, everything else raises UnknownRoom. Expired
  rooms and their answers are deleted by `purge_expired`, which any call runs at most once a
  PURGE_EVERY_S.
- Presenter calls (set_page, reveal, reset, end, answers_so_far, nicknames, lesson_summary,
  summary_csv) need the room's secret; a wrong or missing one raises Forbidden.
- `answer` returns only after its transaction committed: an acknowledged answer is durable.
  One answer per (room, session, question, phase) (a UNIQUE constraint; a second call changes
  it) until that question is revealed in that phase, then AnswerClosed. Each session may send
  5 answers per 10 s (RateLimited beyond, for that session only).
- `distribution` is refused (NotRevealed) before the reveal: nobody sees answers before it.
- `room(code, max_age_s)` with max_age_s > 0 may answer from lib.classroom.room_cache (one query
  per room per max_age_s for any number of pollers): this process's set_page/reveal/reset/end
  are seen at once, another replica's at most max_age_s late. Every check that matters (an
  answer after the reveal, the secret) is made by the store on the database, never on a view.
Thread-safe; several processes (replicas) may share one PostgreSQL database.
"""
from __future__ import annotations

import json
import time
from typing import Callable, Mapping, Sequence

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError

from lib.classroom.codes import clean_nickname, hash_secret, new_code, new_secret, \
    normalize_code, secret_matches
from lib.classroom.database import Database
from lib.classroom.errors import AnswerClosed, Forbidden, InvalidAnswer, NotRevealed, \
    RateLimited, UnknownRoom
from lib.classroom.models import OPTION_MAX, PHASES, QUESTION_MAX, SESSION_MAX, Answer, \
    Reveal, Room
from lib.classroom.rate_limit import TokenBucket
from lib.classroom.room_cache import RoomCache
from lib.classroom.summary import LessonSummary, summarize, to_csv
from lib.classroom.views import RoomKeys, RoomView

TOUCH_EVERY_S = 60.0          # an answer refreshes last_activity at most this often
PARAMS_MAX_CHARS = 4000


def _text(value: object, name: str, limit: int) -> str:
    if not isinstance(value, str) or not value or len(value) > limit:
        raise InvalidAnswer(f"{name} must be a non-empty string of at most {limit} characters")
    return value


class ClassStore(Database):
    """The live class's database (see the module docstring for the contracts)."""

    def __init__(self, url: str | None = None, *, clock: Callable[[], float] = time.time,
                 limiter: TokenBucket | None = None):
        super().__init__(url, clock=clock)
        self._limiter = limiter if limiter is not None else TokenBucket(5, per_seconds=10.0)
        self._views: RoomCache[RoomView | None] = RoomCache(self._room_now)

    # ---- rooms ---------------------------------------------------------------------------------
    def create_room(self, lang: str = "en") -> RoomKeys:
        """A new room with a fresh unique code and secret (see lib.classroom.codes)."""
        self._maybe_purge()
        for _ in range(20):
            code, secret, now = new_code(), new_secret(), self._clock()
            try:
                with self._write() as s:
                    s.add(Room(code=code, secret_hash=hash_secret(secret), lang=str(lang)[:8],
                               slug=None, params_json="{}", version=0, created_at=now,
                               last_activity=now))
                return RoomKeys(code, secret)
            except IntegrityError:          # the code is taken (by an open or expired room)
                continue
        raise RuntimeError("no free room code after 20 draws")

    def room(self, code: str | None, max_age_s: float = 0.0) -> RoomView | None:
        """The room as students see it, or None when unknown, ended or expired; with
        `max_age_s` > 0 possibly as it was up to that long ago (see the module docstring)."""
        c = normalize_code(code)
        if c is None:
            return None
        return self._views.get(c, max_age_s) if max_age_s > 0 else self._room_now(c)

    def _room_now(self, code: str) -> RoomView | None:
        try:
            with self._read() as s:
                room = self._live(s, code)
                reveals = s.execute(select(Reveal.question, Reveal.phase, Reveal.correct)
                                    .where(Reveal.room_code == room.code)).all()
                return RoomView(room.code, room.lang, room.slug, json.loads(room.params_json),
                                room.version, {(q, p): c for q, p, c in reveals})
        except UnknownRoom:
            return None

    def set_page(self, code: str, secret: str, slug: str,
                 params: Mapping[str, str] | None = None) -> int:
        """Project page `slug` with `params` (str -> str); returns the new version."""
        slug = _text(slug, "slug", 100)
        params = dict(params or {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in params.items()):
            raise InvalidAnswer("params must map strings to strings")
        text = json.dumps(params, sort_keys=True)
        if len(text) > PARAMS_MAX_CHARS:
            raise InvalidAnswer(f"params over {PARAMS_MAX_CHARS} characters")
        with self._write() as s:
            room = self._presenter(s, code, secret)
            room.slug, room.params_json = slug, text
            self._moved(room)
        self._views.forget(room.code)
        return room.version

    def reveal(self, code: str, secret: str, question: str, correct: str, phase: str = "live",
               options: Sequence[str] | None = None) -> int:
        """Reveal `question` in `phase`, recording the model's live answer `correct` (and the
        options, so the distribution lists the ones nobody chose). Answers close. Returns the
        new version. Revealing again replaces the recorded answer."""
        question = _text(question, "question", QUESTION_MAX)
        correct = _text(correct, "correct", OPTION_MAX)
        if phase not in PHASES:
            raise InvalidAnswer(f"phase must be one of {PHASES}")
        opts = json.dumps([_text(o, "option", OPTION_MAX) for o in options]) if options else None
        with self._write() as s:
            room = self._presenter(s, code, secret)
            row = s.get(Reveal, (room.code, question, phase))
            if row is None:
                s.add(Reveal(room_code=room.code, question=question, phase=phase,
                             correct=correct, options_json=opts, revealed_at=self._clock()))
            else:
                row.correct, row.options_json = correct, opts or row.options_json
            self._moved(room)
        self._views.forget(room.code)
        return room.version

    def reset(self, code: str, secret: str, question: str | None = None) -> int:
        """Forget the answers and reveals of `question` (every phase), or of every question when
        None; answers open again. Returns the new version."""
        with self._write() as s:
            room = self._presenter(s, code, secret)
            for table in (Answer, Reveal):
                q = delete(table).where(table.room_code == room.code)
                if question is not None:
                    q = q.where(table.question == question)
                s.execute(q)
            self._moved(room)
        self._views.forget(room.code)
        return room.version

    def end(self, code: str, secret: str) -> None:
        """Delete the room and every answer and reveal in it."""
        with self._write() as s:
            room = self._presenter(s, code, secret)
            self._delete_rooms(s, [room.code])
        self._views.forget(room.code)

    # ---- answers -------------------------------------------------------------------------------
    def answer(self, code: str, session_id: str, question: str, option: str,
               options: Sequence[str], phase: str = "live", nickname: str | None = None) -> None:
        """Record (or change) this session's answer; returns after the commit."""
        c = normalize_code(code)
        if c is None:
            raise UnknownRoom(code)
        session_id = _text(session_id, "session_id", SESSION_MAX)
        if not self._limiter.allow((c, session_id)):
            raise RateLimited(session_id)
        question = _text(question, "question", QUESTION_MAX)
        if phase not in PHASES:
            raise InvalidAnswer(f"phase must be one of {PHASES}")
        if isinstance(options, str) or option not in list(options):
            raise InvalidAnswer(f"{option!r} is not one of the options")
        option = _text(option, "option", OPTION_MAX)
        nick, now = clean_nickname(nickname), self._clock()
        with self._write() as s:
            room = self._live(s, c, lock="share")     # a reveal (FOR UPDATE) waits for us
            if s.get(Reveal, (room.code, question, phase)) is not None:
                raise AnswerClosed(question)
            stale = room.last_activity < now - TOUCH_EVERY_S
            ins = (pg_insert if self._postgres else sqlite_insert)(Answer).values(
                room_code=room.code, session_id=session_id, question=question, phase=phase,
                option=option, nickname=nick, answered_at=now)
            s.execute(ins.on_conflict_do_update(
                index_elements=["room_code", "session_id", "question", "phase"],
                set_={"option": ins.excluded.option, "answered_at": ins.excluded.answered_at,
                      "nickname": func.coalesce(ins.excluded.nickname, Answer.nickname)}))
        if stale:                                      # its own short transaction: no deadlock
            with self._write() as s:
                s.execute(update(Room).where(Room.code == c, Room.last_activity < now)
                          .values(last_activity=now))

    def own_answer(self, code: str, session_id: str, question: str,
                   phase: str = "live") -> str | None:
        """The option this session answered (None if none): a student's own answer only, e.g.
        for a reloaded tab that kept its id."""
        with self._read() as s:
            room = self._live(s, code)
            return s.scalar(select(Answer.option).where(
                Answer.room_code == room.code, Answer.session_id == session_id,
                Answer.question == question, Answer.phase == phase))

    def count(self, code: str, question: str, phase: str = "live") -> int:
        """How many sessions answered `question` in `phase` (anyone may ask: no answer shown)."""
        with self._read() as s:
            room = self._live(s, code)
            return s.scalar(select(func.count()).select_from(Answer).where(
                Answer.room_code == room.code, Answer.question == question,
                Answer.phase == phase)) or 0

    def answers_so_far(self, code: str, secret: str, question: str, phase: str = "live") -> int:
        """`count`, for the presenter (checks the secret)."""
        with self._read() as s:
            room = self._live(s, code)
            if not secret_matches(secret, room.secret_hash):
                raise Forbidden(code)
        return self.count(code, question, phase)

    def distribution(self, code: str, question: str, phase: str = "live") -> dict[str, int]:
        """option -> answers, once `question` is revealed in `phase` (NotRevealed before): the
        options recorded at the reveal first, in their order (zeros included), then any other."""
        with self._read() as s:
            room = self._live(s, code)
            rev = s.get(Reveal, (room.code, question, phase))
            if rev is None:
                raise NotRevealed(question)
            rows = s.execute(select(Answer.option, func.count()).where(
                Answer.room_code == room.code, Answer.question == question,
                Answer.phase == phase).group_by(Answer.option).order_by(Answer.option)).all()
        got = {o: int(n) for o, n in rows}
        out = {o: got.pop(o, 0) for o in json.loads(rev.options_json or "[]")}
        out.update(got)
        return out

    def nicknames(self, code: str, secret: str) -> list[str]:
        """The distinct nicknames given in this room, sorted (lecturer only)."""
        with self._read() as s:
            room = self._live(s, code)
            if not secret_matches(secret, room.secret_hash):
                raise Forbidden(code)
            return sorted(s.scalars(select(Answer.nickname).distinct().where(
                Answer.room_code == room.code, Answer.nickname.is_not(None))).all())

    def lesson_summary(self, code: str, secret: str,
                       lesson_questions: Mapping[str, str]) -> LessonSummary:
        """Before/after shares and normalized gains (lib.classroom.summary) of the lesson's
        questions (question id -> correct option, in order), from the pre and post answers."""
        with self._read() as s:
            room = self._live(s, code)
            if not secret_matches(secret, room.secret_hash):
                raise Forbidden(code)
            rows = s.execute(select(Answer.question, Answer.phase, Answer.option, func.count())
                             .where(Answer.room_code == room.code,
                                    Answer.question.in_(list(lesson_questions)))
                             .group_by(Answer.question, Answer.phase, Answer.option)).all()
        counts: dict[tuple[str, str], dict[str, int]] = {}
        for q, phase, option, n in rows:
            counts.setdefault((q, phase), {})[option] = int(n)
        return summarize(counts, lesson_questions)

    def summary_csv(self, code: str, secret: str, lesson_questions: Mapping[str, str]) -> str:
        """`lesson_summary` as CSV (anonymous counts only)."""
        return to_csv(self.lesson_summary(code, secret, lesson_questions))
