"""One language mechanism: every text lives in assets/text/<name>.toml as [en] and [id]
tables with the same keys. `texts("temperature")` returns a lookup for the current language.

The language comes from the `lang` URL parameter (en | id) when a link is opened, then from the
sidebar choice; it is kept in the session so page switches keep it (see `current_lang`)."""
from __future__ import annotations

import numbers
import re
import string
import tomllib
from functools import lru_cache
from pathlib import Path

import streamlit as st

LANGS = ("en", "id")
TEXT_DIR = Path(__file__).resolve().parents[2] / "assets" / "text"


@lru_cache(maxsize=None)
def load_texts(name: str) -> dict[str, dict[str, str]]:
    with (TEXT_DIR / f"{name}.toml").open("rb") as f:
        data = tomllib.load(f)
    missing = set(data.get("en", {})) ^ set(data.get("id", {}))
    if missing:
        raise KeyError(f"assets/text/{name}.toml: keys not in both languages: {sorted(missing)}")
    return data


LANG_PARAM = "lang"
_SEEN = "_lang_url_seen"     # the URL's lang value this session last saw (or wrote)
BAD_LANG = "_lang_bad"       # an invalid URL value, for the page's note (lib.ui.state)


def current_lang() -> str:
    """The session's language. The URL's `lang` decides only when it CHANGED since this session
    last saw or wrote it (a link was opened or edited); otherwise the sidebar choice stands, so
    `?lang=id` followed by choosing English gives English. An invalid value (`lang=`, `EN`,
    `../x`) is ignored and remembered for a note."""
    raw = st.query_params.get(LANG_PARAM)
    if raw is not None and raw != st.session_state.get(_SEEN):
        if raw in LANGS:
            st.session_state["lang"] = raw
        else:
            st.session_state[BAD_LANG] = raw
    st.session_state[_SEEN] = raw
    return st.session_state.get("lang", "en")


def publish_lang(lang: str) -> None:
    """Write the language to the URL (absent for English), remembering what was written so the
    next run does not mistake it for a newly opened link."""
    if lang != "en":
        if st.query_params.get(LANG_PARAM) != lang:
            st.query_params[LANG_PARAM] = lang
        st.session_state[_SEEN] = lang
    else:
        if LANG_PARAM in st.query_params:
            del st.query_params[LANG_PARAM]
        st.session_state[_SEEN] = None


# Decimal and thousands separators per language: English 20,000.5 / Indonesian 20.000,5.
SEPARATORS = {"en": ".,", "id": ",."}


# The one minus sign of displayed numbers (U+2212, as Plotly's ticks draw it), never the hyphen.
MINUS = "\u2212"


def format_number(value, spec: str = "", lang: str = "en") -> str:
    """`format(value, spec)` written the way `lang` writes numbers:
    format_number(20000, ",", "id") -> "20.000"; format_number(0.5, ".1f", "id") -> "0,5";
    format_number(-3, ".1f", "id") -> "−3,0" (a true minus, in the exponent too: "2.5e−06").
    Display text only: URL values and CSV downloads keep Python's own "-3.0"."""
    text = format(value, spec)
    if SEPARATORS.get(lang, ".,") != ".,":
        text = text.translate(str.maketrans({",": ".", ".": ","}))
    return text.replace("-", MINUS)


class _LocalFormatter(string.Formatter):
    """str.format that writes every number field (int, float, numpy scalar) in the language's
    separators, so `{n:,}` and `{p:.2f}` read 20.000 and 0,50 in Indonesian."""

    def __init__(self, lang: str):
        self.lang = lang

    def format_field(self, value, format_spec):
        if isinstance(value, numbers.Number) and not isinstance(value, bool):
            return format_number(value, format_spec, self.lang)
        return super().format_field(value, format_spec)

    def vformat(self, format_string, args, kwargs):
        """As str.format, except that a field inside a `code` span is written as Python writes it
        (`length_penalty=-1.5`, not −1,5: code a reader may copy stays code)."""
        out, in_code = [], False
        for literal, field, spec, conversion in self.parse(format_string):
            out.append(literal)
            in_code ^= literal.count("`") % 2 == 1
            if field is None:
                continue
            value = self.convert_field(self.get_field(field, args, kwargs)[0], conversion)
            spec = self.vformat(spec, args, kwargs) if spec and "{" in spec else spec or ""
            out.append(format(value, spec) if in_code else self.format_field(value, spec))
        return "".join(out)


# "{n} token(s)": the count written just before the "(s)" (at most a few words back) decides it.
_PLURAL = re.compile(r"(?<![\w.,])(\d[\d.,]*)((?:[ /-][^\s(),;:]+){1,3}?)\(s\)")


def plurals(text: str) -> str:
    """An English text's "(s)" made singular or plural by the count before it: "1 shared
    key/value head(s)" -> "1 shared key/value head", "3 token(s)" -> "3 tokens" (issue 33: a
    heading read "1 shared key/value head(s)" on the projector). A "(s)" with no count before
    it stays."""
    return _PLURAL.sub(lambda m: m.group(1) + m.group(2) + ("" if m.group(1) == "1" else "s"), text)


class Texts:
    """T("key", n=3) -> the text in the current language, formatted with str.format
    (numbers in the language's own separators: see `format_number`)."""

    def __init__(self, name: str, lang: str):
        self.name, self.lang = name, lang
        self.table = load_texts(name)[lang]
        self._formatter = _LocalFormatter(lang)

    def __call__(self, key: str, **fmt) -> str:
        s = self.table[key]
        return plurals(self._formatter.format(s, **fmt)) if fmt else s

    def num(self, value, spec: str = "") -> str:
        """One number written for this language (tables, legends, hover texts)."""
        return format_number(value, spec, self.lang)

    def get(self, key: str, default: str = "") -> str:
        return self.table.get(key, default)

    def list(self, prefix: str) -> list[str]:
        """All texts whose key starts with `prefix`, in file order (e.g. notice_1, notice_2)."""
        return [v for k, v in self.table.items() if k.startswith(prefix)]


def texts(name: str) -> Texts:
    return Texts(name, current_lang())
