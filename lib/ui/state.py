"""One query-parameter state mechanism: every control is bound to the URL.

A widget made here
  1. takes its first value from the URL (`?T=0.7`), else the default;
  2. clamps an out-of-range value, or ignores a malformed one, with a visible note;
  3. writes its current value back to the URL, so a copied link reopens the same state.

Parameters no widget on the page claimed are dropped from the URL with a note (`finish`).
Widget keys are namespaced by page (`temperature.T`), URL names are short (`T`).

Every control also records its range as URL values (`CONTROLS[page][name]`: its kind, default
and the values at both ends and one between). With `LLM_LAB_CONTROLS_OUT=<file>` set, the
server writes that record to the file after each script run: how `python -m bench --explore`
learns, from a real server, which value of which control to try on every page.
"""
from __future__ import annotations

import json
import math
import os
import re
import threading
from typing import Callable, Sequence

import streamlit as st

from lib.ui.i18n import BAD_LANG, LANG_PARAM, LANGS

GLOBAL_PARAMS = {LANG_PARAM}  # owned by the app shell
CONTROLS: dict[str, dict[str, dict]] = {}     # page -> URL name -> {kind, default, values}
_controls_lock = threading.Lock()


def _ends_and_middle(values: Sequence[str]) -> list[str]:
    """First, middle and last of `values`, without repeats."""
    picked = [values[0], values[len(values) // 2], values[-1]] if values else []
    return list(dict.fromkeys(picked))


MAX_GRID = 5000      # options of a select_slider at most (each is sent to the browser; sliding-window t has 4,081)


def slider_digits(step, fmt=None) -> int:
    """The decimals a float slider shows, the same in every language (issue 33: 1.00 in English
    beside 1,0 in Indonesian): a printf `fmt`'s precision ("%.2f" -> 2), else the step's
    (0.05 -> 2, 0.5 -> 1, 1.0 -> 0); Streamlit's default step 0.01 shows 2."""
    if fmt and "." in fmt:
        return int(re.match(r"\d+", fmt.split(".", 1)[1]).group())
    if step is None:
        return 2
    return 0 if float(step).is_integer() else len(repr(float(step)).split(".")[1])


class UrlState:
    def __init__(self, page: str, notes: list[str], t):
        self.page, self.notes, self.t = page, notes, t
        self.claimed: set[str] = set(GLOBAL_PARAMS)
        bad_lang = st.session_state.pop(BAD_LANG, None)   # set by i18n.current_lang this run
        if bad_lang is not None:
            self.notes.append(t("note_bad_param", name=LANG_PARAM, value=bad_lang[:40],
                                reason=f"allowed: {', '.join(LANGS)}"))

    # ---- core ------------------------------------------------------------------------------
    def _key(self, name: str) -> str:
        return f"{self.page}.{name}"

    def _init(self, name: str, default, parse: Callable[[str], object]):
        """Seed session state from the URL once per session; return the widget key."""
        self.claimed.add(name)
        key = self._key(name)
        if key not in st.session_state:
            value = default
            raw = st.query_params.get(name)
            if raw is not None:
                try:
                    value = parse(raw)
                except (ValueError, TypeError) as e:
                    self.notes.append(self.t("note_bad_param", name=name, value=raw[:40], reason=str(e)))
                    value = default
            st.session_state[key] = value
        return key

    def _record(self, name: str, kind: str, default: str, values: Sequence[str]) -> None:
        CONTROLS.setdefault(self.page, {})[name] = {"kind": kind, "default": default,
                                                    "values": _ends_and_middle(list(values))}

    def _publish(self, name: str, value, default, fmt=str) -> None:
        if value == default:
            if name in st.query_params:
                del st.query_params[name]
        else:
            text = fmt(value)
            if st.query_params.get(name) != text:
                st.query_params[name] = text

    def _clamp(self, name: str, value, lo, hi, raw: str | None = None):
        """value within [lo, hi]; outside, the nearest end with a note that quotes the URL's
        own text (`raw`, as typed: n=1e9) or else the value as a URL writes it."""
        if value < lo or value > hi:
            clamped = min(max(value, lo), hi)
            shown = raw if raw is not None else f"{value:g}"
            self.notes.append(self.t("note_clamped", name=name, value=shown, lo=lo, hi=hi, used=clamped))
            return clamped
        return value

    # ---- widgets ---------------------------------------------------------------------------
    def number_slider(self, name: str, label: str, lo, hi, default, step=None, fmt=None,
                      help: str | None = None, container=st):
        """A slider for int (if all bounds are ints) or float values."""
        is_int = all(isinstance(v, int) for v in (lo, hi, default)) and (step is None or isinstance(step, int))
        cast = int if is_int else float

        def parse(raw):
            v = float(raw)
            if not math.isfinite(v):
                raise ValueError("not a finite number")
            if is_int and v != int(v):
                raise ValueError("not a whole number")
            return self._clamp(name, cast(v), lo, hi, str(raw))

        key = self._init(name, default, parse)
        url = (lambda v: str(int(v))) if is_int else (lambda v: f"{v:g}")
        grid = step or (1 if is_int else 0.01)
        middle = cast(round(lo + round((hi - lo) / 2 / grid) * grid, 10))     # on the slider's grid
        self._record(name, "number", url(default), [url(lo), url(middle), url(hi)])
        lang = getattr(self.t, "lang", "en")
        # Streamlit's slider prints with a printf format: no thousands separator, a decimal point
        # in every language. A whole number of 4+ digits (4,096 / 4.096) or a decimal under a
        # decimal-comma language is a select_slider over the same grid, written by `t.num`.
        # A select_slider sends every option to the browser: past MAX_GRID steps (a step-1 range
        # of thousands) the plain slider stays, ungrouped. A range below zero is written by `t.num`
        # too: printf's minus is a hyphen ("-3.0"), the app's is "−" (U+2212) in both languages.
        signed = lo < 0
        grouped = is_int and (max(abs(lo), abs(hi)) >= 1000 or signed) and (hi - lo) // (step or 1) < MAX_GRID
        comma = not is_int and (lang != "en" or signed)
        kind = "grouped" if grouped else "comma" if comma else "plain"
        self._keep_value_across_widget_kinds(key, kind)
        digits = None if is_int else slider_digits(step, fmt)
        if grouped:
            value = self._select_number_slider(key, label, list(range(lo, hi + 1, step or 1)), ",", help, container)
        elif comma:
            step = step or 0.01                                    # Streamlit's float default
            grid = [round(lo + i * step, 10) for i in range(round((hi - lo) / step) + 1)]
            value = self._select_number_slider(key, label, grid, f".{digits}f", help, container)
        else:
            value = container.slider(label, lo, hi, key=key, step=step, help=help,
                                     format=fmt or (None if is_int else f"%.{digits}f"))
        st.session_state[f"{key}.shown"] = (kind, value)
        self._publish(name, value, default, fmt=lambda v: f"{v:g}" if not is_int else str(v))
        return value

    @staticmethod
    def _keep_value_across_widget_kinds(key: str, kind: str) -> None:
        """A language switch turns a float slider into a select_slider or back: a different
        widget, which Streamlit would start at its minimum. Hand it the value shown last run."""
        shown = st.session_state.get(f"{key}.shown")
        if shown is not None and shown[0] != kind:
            st.session_state[key] = shown[1]

    def _select_number_slider(self, key: str, label: str, grid: list, spec: str, help, container):
        """The slider as a select_slider over `grid`, each value written by `t.num(v, spec)`
        (Indonesian 0,80; 4.096). A URL value between steps snaps to the nearest one."""
        current = st.session_state[key]
        if current not in grid:
            st.session_state[key] = min(grid, key=lambda g: abs(g - current))
        return container.select_slider(label, grid, key=key, help=help,
                                       format_func=lambda v: self.t.num(v, spec))

    def select(self, name: str, label: str, options: Sequence, default, format_func=str,
               help: str | None = None, horizontal: bool = False, radio: bool = False, container=st):
        by_text = {str(o): o for o in options}

        def parse(raw):
            if raw not in by_text:
                raise ValueError(f"allowed: {', '.join(by_text)}")
            return by_text[raw]

        key = self._init(name, default, parse)
        self._record(name, "select", str(default), list(by_text))
        if radio:
            value = container.radio(label, options, key=key, format_func=format_func, help=help,
                                    horizontal=horizontal)
        else:
            value = container.selectbox(label, options, key=key, format_func=format_func, help=help)
        self._publish(name, value, default)
        return value

    def multiselect(self, name: str, label: str, options: Sequence, default: Sequence,
                    format_func=str, help: str | None = None, container=st):
        by_text = {str(o): o for o in options}

        def parse(raw):
            items = [s for s in raw.split(",") if s]
            bad = [s for s in items if s not in by_text]
            if bad:
                raise ValueError(f"unknown: {', '.join(bad)}")
            return [by_text[s] for s in items]

        key = self._init(name, list(default), parse)
        self._record(name, "multiselect", ",".join(map(str, default)),
                     [",".join(list(by_text)[:1]), ",".join(by_text)])
        value = container.multiselect(label, options, key=key, format_func=format_func, help=help)
        self._publish(name, list(value), list(default), fmt=lambda v: ",".join(map(str, v)))
        return value

    def checkbox(self, name: str, label: str, default: bool, help: str | None = None, container=st):
        def parse(raw):
            if raw.lower() not in ("0", "1", "true", "false"):
                raise ValueError("use 1 or 0")
            return raw.lower() in ("1", "true")

        key = self._init(name, default, parse)
        self._record(name, "checkbox", "1" if default else "0", ["0", "1"])
        value = container.checkbox(label, key=key, help=help)
        self._publish(name, value, default, fmt=lambda v: "1" if v else "0")
        return value

    def text(self, name: str, label: str, default: str, max_chars: int = 4000, area: bool = True,
             help: str | None = None, height: int | None = None, container=st):
        def parse(raw):
            if len(raw) > max_chars:
                self.notes.append(self.t("note_long_text", name=name, n=len(raw), cap=max_chars))
                return raw[:max_chars]
            return raw

        key = self._init(name, default, parse)
        self._record(name, "text", default, [])
        if area:
            value = container.text_area(label, key=key, max_chars=max_chars, help=help, height=height)
        else:
            value = container.text_input(label, key=key, max_chars=max_chars, help=help)
        self._publish(name, value, default)
        return value

    def integer(self, name: str, label: str, lo: int, hi: int, default: int, help: str | None = None,
                container=st):
        def parse(raw):
            v = int(raw)
            return self._clamp(name, v, lo, hi, str(raw))

        key = self._init(name, default, parse)
        self._record(name, "integer", str(default), [str(lo), str((lo + hi) // 2), str(hi)])
        value = container.number_input(label, lo, hi, key=key, step=1, help=help)
        self._publish(name, int(value), default)
        return int(value)

    # ---- end of page -----------------------------------------------------------------------
    def unclaimed(self) -> list[str]:
        return [k for k in st.query_params.keys() if k not in self.claimed]

    def finish(self) -> None:
        """Drop URL parameters that no control claimed, with a note."""
        for name in self.unclaimed():
            self.notes.append(self.t("note_unknown_param", name=name[:40]))
            del st.query_params[name]
        out = os.environ.get("LLM_LAB_CONTROLS_OUT")
        if out:
            with _controls_lock:
                tmp = f"{out}.{threading.get_ident()}.tmp"
                with open(tmp, "w") as f:
                    json.dump(CONTROLS, f, indent=1)
                os.replace(tmp, out)
