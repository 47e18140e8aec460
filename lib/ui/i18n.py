"""One language mechanism: every text lives in assets/text/<name>.toml as [en] and [id]
tables with the same keys. `texts("temperature")` returns a lookup for the current language.

The language comes from the `lang` URL parameter (en | id), kept in the session so page
switches keep it."""
from __future__ import annotations

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


def current_lang() -> str:
    raw = st.query_params.get("lang")
    if raw in LANGS:
        st.session_state["lang"] = raw
    return st.session_state.get("lang", "en")


class Texts:
    """T("key", n=3) -> the text in the current language, formatted with str.format."""

    def __init__(self, name: str, lang: str):
        self.name, self.lang = name, lang
        self.table = load_texts(name)[lang]

    def __call__(self, key: str, **fmt) -> str:
        s = self.table[key]
        return s.format(**fmt) if fmt else s

    def get(self, key: str, default: str = "") -> str:
        return self.table.get(key, default)

    def list(self, prefix: str) -> list[str]:
        """All texts whose key starts with `prefix`, in file order (e.g. notice_1, notice_2)."""
        return [v for k, v in self.table.items() if k.startswith(prefix)]


def texts(name: str) -> Texts:
    return Texts(name, current_lang())
