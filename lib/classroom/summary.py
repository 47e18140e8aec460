"""Did they learn? A lesson's before/after shares correct and the class's normalized gain.

    share = correct answers / answers                    (per question, and pooled over all)
    g     = (post - pre) / (1 - pre)                     (Hake's normalized gain)

g is None, with `undefined` saying why, when a phase has no answers ("no_pre"/"no_post") or when
pre == 1 ("pre_all_correct": everyone was right before, there was nothing left to gain; we do
not divide by zero). Only anonymous counts go in, so only anonymous counts come out.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Mapping

Counts = Mapping[tuple[str, str], Mapping[str, int]]   # (question, phase) -> option -> answers


@dataclass(frozen=True)
class Gain:
    """One row: a question (or "overall") before and after."""
    question: str
    correct: str | None          # the right option (None for the overall row)
    pre_n: int
    pre_correct: int
    post_n: int
    post_correct: int

    @property
    def pre(self) -> float | None:
        return self.pre_correct / self.pre_n if self.pre_n else None

    @property
    def post(self) -> float | None:
        return self.post_correct / self.post_n if self.post_n else None

    @property
    def undefined(self) -> str | None:
        """Why g is undefined ("no_pre", "no_post", "pre_all_correct"), or None when it is not."""
        if self.pre is None:
            return "no_pre"
        if self.post is None:
            return "no_post"
        if self.pre_correct == self.pre_n:
            return "pre_all_correct"
        return None

    @property
    def gain(self) -> float | None:
        if self.undefined is not None:
            return None
        pre, post = self.pre, self.post
        assert pre is not None and post is not None
        return (post - pre) / (1.0 - pre)


@dataclass(frozen=True)
class LessonSummary:
    """Per question in the lesson's order, and pooled over all of them."""
    questions: tuple[Gain, ...]
    overall: Gain


def summarize(counts: Counts, lesson_questions: Mapping[str, str]) -> LessonSummary:
    """`lesson_questions`: question id -> its correct option, in the lesson's order."""
    rows = []
    for q, correct in lesson_questions.items():
        pre = counts.get((q, "pre"), {})
        post = counts.get((q, "post"), {})
        rows.append(Gain(q, correct, sum(pre.values()), pre.get(correct, 0),
                         sum(post.values()), post.get(correct, 0)))
    overall = Gain("overall", None, sum(r.pre_n for r in rows), sum(r.pre_correct for r in rows),
                   sum(r.post_n for r in rows), sum(r.post_correct for r in rows))
    return LessonSummary(tuple(rows), overall)


CSV_COLUMNS = ("question", "correct_option", "pre_answers", "pre_correct", "pre_share",
               "post_answers", "post_correct", "post_share", "normalized_gain", "gain_undefined")


def to_csv(summary: LessonSummary) -> str:
    """The summary as CSV text (one row per question, then "overall"); shares and g with 4
    decimals, empty where undefined (gain_undefined says why)."""
    def f(x: float | None) -> str:
        return "" if x is None else f"{x:.4f}"

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in (*summary.questions, summary.overall):
        w.writerow([r.question, r.correct or "", r.pre_n, r.pre_correct, f(r.pre), r.post_n,
                    r.post_correct, f(r.post), f(r.gain), r.undefined or ""])
    return buf.getvalue()
