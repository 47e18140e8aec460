"""The caption that says where a page's shared results came from (`page.finish()` shows it):
computed now, computed earlier on this server (when), or loaded from the cache folder (when,
on which machine), with the machine's load when they were computed."""
from __future__ import annotations

import time

import streamlit as st

from lib.serving import memo
from lib.ui.i18n import Texts, texts


def _when(t: float) -> str:
    same_day = time.strftime("%Y-%m-%d", time.gmtime(t)) == time.strftime("%Y-%m-%d", time.gmtime())
    return time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", time.gmtime(t))


def caption_text(used: list[memo.Used], lang: str | None = None) -> str | None:
    """One line for the results this run used, or None when it used none."""
    if not used:
        return None
    c = texts("server") if lang is None else Texts("server", lang)
    parts = []
    now = [u for u in used if u.origin == "computed"]
    here = [u for u in used if u.origin == "shared"]
    disk = [u for u in used if u.origin == "disk"]
    if now:
        parts.append(c("cached_now", n=len(now), s=sum(u.prov.seconds for u in now)))
    if here:
        parts.append(c("cached_here", when=_when(min(u.prov.computed_at for u in here)), n=len(here)))
    if disk:
        first = min(disk, key=lambda u: u.prov.computed_at)
        parts.append(c("cached_disk", when=_when(first.prov.computed_at), host=first.prov.host, n=len(disk)))
    worst = max(used, key=lambda u: u.prov.load_avg)
    parts.append(c("cached_load", load=worst.prov.load_avg, cpus=worst.prov.cpus))
    return f"{c('cached_intro')} " + " · ".join(parts)


def show() -> None:
    """st.caption of this run's results (nothing if it used none)."""
    text = caption_text(memo.run_provenance())
    if text:
        st.caption(f"🗄️ {text}")
