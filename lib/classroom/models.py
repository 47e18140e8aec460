"""The live class's tables (SQLAlchemy 2 typed ORM), the same on SQLite and PostgreSQL.

    rooms    one row per open room: code, hashed secret, the page the lecturer projects, its
             params (JSON text), a version bumped on every lecturer move, last activity
    reveals  (room, question, phase) -> the model's answer recorded at the reveal (+ options)
    answers  one row per (room, session, question, phase), enforced by a UNIQUE constraint;
             option, optional cleaned nickname, when

Times are UNIX seconds (float). Deleting a room deletes its reveals and answers (ON DELETE
CASCADE, and the store deletes them explicitly too, for SQLite connections without foreign keys).
"""
from __future__ import annotations

from sqlalchemy import Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

QUESTION_MAX = 100
OPTION_MAX = 200
SESSION_MAX = 64
PHASES = ("live", "pre", "post")


class Base(DeclarativeBase):
    """Declarative base of the classroom tables (their own metadata, nothing else in it)."""


class Room(Base):
    __tablename__ = "class_rooms"

    code: Mapped[str] = mapped_column(String(8), primary_key=True)
    secret_hash: Mapped[str] = mapped_column(String(64))
    lang: Mapped[str] = mapped_column(String(8), default="en")
    slug: Mapped[str | None] = mapped_column(String(100), nullable=True)
    params_json: Mapped[str] = mapped_column(Text, default="{}")
    version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[float] = mapped_column(Float)
    last_activity: Mapped[float] = mapped_column(Float, index=True)


class Reveal(Base):
    __tablename__ = "class_reveals"

    room_code: Mapped[str] = mapped_column(
        String(8), ForeignKey("class_rooms.code", ondelete="CASCADE"), primary_key=True)
    question: Mapped[str] = mapped_column(String(QUESTION_MAX), primary_key=True)
    phase: Mapped[str] = mapped_column(String(4), primary_key=True)
    correct: Mapped[str] = mapped_column(String(OPTION_MAX))
    options_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    revealed_at: Mapped[float] = mapped_column(Float)


class Answer(Base):
    __tablename__ = "class_answers"
    __table_args__ = (
        UniqueConstraint("room_code", "session_id", "question", "phase",
                         name="one_answer_per_session_question_phase"),
        Index("answers_by_question", "room_code", "question", "phase"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    room_code: Mapped[str] = mapped_column(
        String(8), ForeignKey("class_rooms.code", ondelete="CASCADE"))
    session_id: Mapped[str] = mapped_column(String(SESSION_MAX))
    question: Mapped[str] = mapped_column(String(QUESTION_MAX))
    phase: Mapped[str] = mapped_column(String(4))
    option: Mapped[str] = mapped_column(String(OPTION_MAX))
    nickname: Mapped[str | None] = mapped_column(String(20), nullable=True)
    answered_at: Mapped[float] = mapped_column(Float)
