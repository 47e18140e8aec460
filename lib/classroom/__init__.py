"""The live class: rooms a lecturer opens, the page students follow, their answers, counted.

Pure Python over SQLAlchemy (no Streamlit here; lib.ui draws it). `store()` is the one
process-wide ClassStore the UI uses (database: lib.classroom.engine.resolve_url); tests build
their own `ClassStore(url)`. Contracts: lib.classroom.store.
"""
from __future__ import annotations

import threading

from lib.classroom.codes import ALPHABET, CODE_LENGTH, NICKNAME_MAX, clean_nickname, normalize_code
from lib.classroom.errors import AnswerClosed, ClassroomError, Forbidden, InvalidAnswer, \
    NotRevealed, RateLimited, UnknownRoom
from lib.classroom.models import PHASES
from lib.classroom.store import ClassStore
from lib.classroom.summary import Gain, LessonSummary
from lib.classroom.views import RoomKeys, RoomView

__all__ = ["ALPHABET", "CODE_LENGTH", "NICKNAME_MAX", "PHASES", "AnswerClosed", "ClassStore",
           "ClassroomError", "Forbidden", "Gain", "InvalidAnswer", "LessonSummary", "NotRevealed",
           "RateLimited", "RoomKeys", "RoomView", "UnknownRoom", "clean_nickname",
           "normalize_code", "store"]

_store: ClassStore | None = None
_lock = threading.Lock()


def store() -> ClassStore:
    """The process-wide store, opened on first use (from $LLM_LAB_CLASS_DB or the SQLite file)."""
    global _store
    with _lock:
        if _store is None:
            _store = ClassStore()
        return _store
