"""The plumbing under ClassStore: engines, transactions, finding a live room, expiry.

`Database(url, clock)` opens (and creates the tables of) the database named by
lib.classroom.engine.resolve_url. `_write()`/`_read()` are one transaction each (committed on
leaving; BEGIN IMMEDIATE for writes on SQLite); both first run `purge_expired` when the last run
was over PURGE_EVERY_S ago. `_live(s, code, lock)` is the open room or UnknownRoom (a room idle
for TTL_S counts as gone before it is purged); lock="share"/"update" takes a row lock on
PostgreSQL (FOR SHARE / FOR UPDATE; SQLite's writer lock already serializes writers).
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from lib.classroom.codes import normalize_code, secret_matches
from lib.classroom.engine import open_engines, resolve_url
from lib.classroom.errors import Forbidden, UnknownRoom
from lib.classroom.models import Answer, Base, Reveal, Room

TTL_S = 24 * 3600.0
PURGE_EVERY_S = 60.0


class Database:
    """Engines, transactions and expiry of the live class's database."""

    def __init__(self, url: str | None = None, *, clock: Callable[[], float] = time.time):
        self.url = resolve_url(url)
        self._reader, self._writer = open_engines(self.url)
        self._postgres = self._writer.dialect.name == "postgresql"
        Base.metadata.create_all(self._writer)
        self._clock = clock
        self._purge_lock = threading.Lock()
        self._last_purge = float("-inf")

    def close(self) -> None:
        """Close every pooled connection (the store is unusable afterwards)."""
        self._reader.dispose()
        self._writer.dispose()

    # ---- sessions ------------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[Session]:
        """One write transaction, committed on leaving (BEGIN IMMEDIATE on SQLite)."""
        self._maybe_purge()
        with Session(self._writer, expire_on_commit=False) as s, s.begin():
            yield s

    @contextmanager
    def _read(self) -> Iterator[Session]:
        self._maybe_purge()
        with Session(self._reader, expire_on_commit=False) as s, s.begin():
            yield s

    def _live(self, s: Session, code: str | None, lock: str | None = None) -> Room:
        """The open room `code`, locked for share/update on PostgreSQL; else UnknownRoom."""
        c = normalize_code(code)
        if c is None:
            raise UnknownRoom(code)
        q = select(Room).where(Room.code == c)
        if lock:
            q = q.with_for_update(read=(lock == "share"))
        room = s.scalars(q).first()
        if room is None or room.last_activity < self._clock() - TTL_S:
            raise UnknownRoom(code)
        return room

    def _presenter(self, s: Session, code: str, secret: str | None) -> Room:
        room = self._live(s, code, lock="update")
        if not secret_matches(secret, room.secret_hash):
            raise Forbidden(code)
        return room

    def _moved(self, room: Room) -> None:
        room.version += 1
        room.last_activity = self._clock()

    # ---- expiry --------------------------------------------------------------------------------
    def purge_expired(self, now: float | None = None) -> int:
        """Delete rooms (with their answers) idle for over TTL_S at `now`; returns how many."""
        cutoff = (self._clock() if now is None else now) - TTL_S
        with self._read() as s:
            if not s.scalars(select(Room.code).where(Room.last_activity < cutoff)).first():
                return 0
        with self._write() as s:
            codes = list(s.scalars(select(Room.code).where(Room.last_activity < cutoff)))
            self._delete_rooms(s, codes)
            return len(codes)

    def _maybe_purge(self) -> None:
        now = time.monotonic()
        if now - self._last_purge < PURGE_EVERY_S or not self._purge_lock.acquire(blocking=False):
            return
        try:
            self._last_purge = now
            self.purge_expired()
        finally:
            self._purge_lock.release()

    @staticmethod
    def _delete_rooms(s: Session, codes: list[str]) -> None:
        if codes:
            for table in (Answer, Reveal):
                s.execute(delete(table).where(table.room_code.in_(codes)))
            s.execute(delete(Room).where(Room.code.in_(codes)))
