"""What the live class's store refuses, one exception per reason, so the UI can say which.

Every one derives from `ClassroomError`; the UI shows a message per class in both languages."""
from __future__ import annotations


class ClassroomError(Exception):
    """Base of every refusal of lib.classroom."""


class UnknownRoom(ClassroomError):
    """No such room: never created, ended by the lecturer, or expired (24 h without activity)."""


class Forbidden(ClassroomError):
    """A presenter action with a missing or wrong presenter secret."""


class InvalidAnswer(ClassroomError, ValueError):
    """An answer that is not one of the question's options, or a malformed argument."""


class AnswerClosed(ClassroomError):
    """The question (in that phase) was revealed: answers can no longer be given or changed."""


class NotRevealed(ClassroomError):
    """The distribution of answers is asked for before the lecturer revealed the question."""


class RateLimited(ClassroomError):
    """This session sent answers faster than the limit (see lib.classroom.rate_limit)."""
