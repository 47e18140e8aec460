"""lib.classroom's pure parts: codes, secrets, nicknames, the token bucket, the gain, the URL."""
from __future__ import annotations

import csv
import io
import math

import pytest

from lib.classroom import codes
from lib.classroom.engine import resolve_url
from lib.classroom.rate_limit import TokenBucket
from lib.classroom.summary import summarize, to_csv


def test_alphabet_has_no_look_alikes_and_codes_use_all_of_it():
    assert not set("0O1IL") & set(codes.ALPHABET)
    assert len(set(codes.ALPHABET)) == len(codes.ALPHABET) == 31
    drawn = [codes.new_code() for _ in range(2000)]
    assert all(len(c) == codes.CODE_LENGTH and set(c) <= set(codes.ALPHABET) for c in drawn)
    assert set("".join(drawn)) == set(codes.ALPHABET)      # 12,000 draws reach every letter
    assert len(set(drawn)) >= 1995                           # 887M codes: collisions are rare


def test_normalize_code_accepts_typing_and_refuses_non_codes():
    assert codes.normalize_code(" ab 3d5f ") == "AB3D5F"
    for bad in (None, "", "AB3D5", "AB3D5FG", "AB0D5F", "ABID5F", 123):
        assert codes.normalize_code(bad) is None


def test_secret_has_128_bits_or_more_and_only_its_hash_matches():
    s = codes.new_secret()
    assert len(s) * 6 >= 128 and len({codes.new_secret() for _ in range(100)}) == 100
    h = codes.hash_secret(s)
    assert s not in h and codes.secret_matches(s, h)
    assert not codes.secret_matches(s + "x", h) and not codes.secret_matches("", h)
    assert not codes.secret_matches(None, h)


@pytest.mark.parametrize("raw,clean", [
    ("Ana", "Ana"), ("  <b>Budi</b>  ", "bBudib"), ("x'; DROP TABLE--", "x DROP TABLE--"),
    ("Siti_Nur-Aini", "Siti_Nur-Aini"), ("a" * 30, "a" * 20), ("🎓🎓", None), ("", None),
    (None, None), ("tab\there\nnew", "tab here new"), ("Ｆｕｌｌ", "Full")])
def test_nickname_is_cleaned(raw, clean):
    assert codes.clean_nickname(raw) == clean


def test_token_bucket_limits_the_flooder_only_and_refills():
    now = [0.0]
    b = TokenBucket(capacity=5, per_seconds=10.0, clock=lambda: now[0])
    assert [b.allow("flood") for _ in range(7)] == [True] * 5 + [False] * 2
    assert b.allow("calm")                     # another client is not touched
    now[0] = 2.0                               # 2 s at 0.5 token/s -> one more
    assert b.allow("flood") and not b.allow("flood")
    now[0] = 100.0
    b.allow("x")                               # sweep: idle full buckets are forgotten
    assert len(b) == 1


def test_gain_by_hand():
    counts = {("q1", "pre"): {"A": 3, "B": 1}, ("q1", "post"): {"A": 1, "B": 3},   # B right
              ("q2", "pre"): {"C": 4}, ("q2", "post"): {"C": 3, "D": 1},           # C right
              ("q3", "pre"): {"E": 2}}                                             # no post
    s = summarize(counts, {"q1": "B", "q2": "C", "q3": "E"})
    q1, q2, q3 = s.questions
    assert (q1.pre, q1.post) == (0.25, 0.75) and math.isclose(q1.gain, (0.75 - 0.25) / 0.75)
    assert q2.pre == 1.0 and q2.gain is None and q2.undefined == "pre_all_correct"
    assert q3.gain is None and q3.undefined == "no_post"
    o = s.overall                       # pooled: pre 1+4+2 of 10, post 3+3 of 8
    assert (o.pre_correct, o.pre_n, o.post_correct, o.post_n) == (7, 10, 6, 8)
    assert math.isclose(o.gain, (0.75 - 0.7) / 0.3)
    rows = list(csv.DictReader(io.StringIO(to_csv(s))))
    assert [r["question"] for r in rows] == ["q1", "q2", "q3", "overall"]
    assert rows[0]["normalized_gain"] == "0.6667" and rows[1]["normalized_gain"] == ""
    assert rows[1]["gain_undefined"] == "pre_all_correct"


def test_url_resolution(monkeypatch, tmp_path):
    monkeypatch.delenv("LLM_LAB_CLASS_DB", raising=False)
    monkeypatch.setenv("LLM_LAB_CACHE", str(tmp_path))
    assert resolve_url() == f"sqlite:///{tmp_path}/classroom.db"
    from lib.model.bundled_model import cache_root        # the same cache folder rule
    assert cache_root() == tmp_path
    monkeypatch.setenv("LLM_LAB_CLASS_DB", "postgresql://u@h:5432/d")
    assert resolve_url() == "postgresql+psycopg://u@h:5432/d"
    assert resolve_url("postgres://u@h/d") == "postgresql+psycopg://u@h/d"
