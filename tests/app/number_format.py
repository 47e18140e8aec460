"""Numbers written for the page's language, checked on what a page actually rendered (issue 33).

`rendered_texts(at)` collects the visible text of an AppTest run: markdown, titles, subheaders,
captions, alerts, widget labels and options, the ends and values sliders print, table cells and every text of a Plotly figure (title, axis titles, tick texts,
trace names, texts, hover texts and templates, annotations) and the hover texts of st.html
bodies (the token chips' `title` attributes). `bad_numbers(text, lang)` returns
every number written the wrong way for `lang`:

- en writes 20,000.5: a comma must group thousands (1-3 digits, then groups of exactly 3), so
  "0,5" and "19,3" are wrong;
- id writes 20.000,5: a dot must group thousands, so "0.5" and "31.66" are wrong, and so is an
  English grouping of two or more groups ("1,000,000");
- in both, an integer of 5 or more digits without a separator ("12345") is wrong, and so is a
  4-digit one ("4819 → 5.281 ms") unless a named rule below exempts it;
- a hyphen-minus before a number ("-3,0"): the app's minus sign is "−" in both languages;
- numbers that run into each other: in id a list of decimal-comma numbers joined by ", "
  ("(17, 19,3 dtk)") reads as one number; in both, two numbers separated by one space
  ("4 sink + 28 31,66") read as one.

Named exemptions (each a rule, not a list of cases):
- YEAR: a 4-digit 1900-2099 (papers, dates);
- ID: digits right after "id", "ID", "#", "token", "port", "seed", "arXiv:", "doi:", "§", "channel" /
  "kanal" (a channel index names a channel: "kanal 1634"), or inside
  brackets like "[2364]"; a number followed by its token text in parentheses ("236761 (.)");
  the cells of a table column whose header names ids ("ids", "ID token") — identifiers, not
  quantities;
- A number glued to letters ("int8", "fp16", "head_dim", "2ⁿ", "Gemma3") is a name, not a number
  (the regular expression only takes digits standing alone);
- One digit ("." or "," after a single digit that is a list index like "1." at a line start) is
  never ambiguous and never checked for grouping.
"""
from __future__ import annotations

import html
import json
import re

# A number standing alone: digits with inner separators, not glued to letters/underscores.
NUMBER = re.compile(r"(?<![\w.,])(\d+(?:[.,]\d+)*)(?![\w])")
ID_BEFORE = re.compile(r"(?:\bid|\bID|#|\btoken|\bport|\bseed|\barXiv|\bdoi|§|\bchannel|\bkanal):?\s*$")
TOKEN_TEXT_AFTER = re.compile(r" \((?![\d−-])[^()\n]{1,12}\)")        # "236761 (.)": an id and its token
ID_HEADER = re.compile(r"\bids?\b", re.I)
# A thousands group never starts with 0: "0.943" in Indonesian and "0,943" in English are decimals
# written the other language's way, not 943 grouped.
EN_OK = re.compile(r"^(?:[1-9]\d{0,2}(?:,\d{3})+|\d{1,4})(?:\.\d+)?$")
ID_OK = re.compile(r"^(?:[1-9]\d{0,2}(?:\.\d{3})+|\d{1,4})(?:,\d+)?$")
RUN_IN_ID = re.compile(r"(?<![\w.,])\d+, \d+,\d+")           # "17, 19,3": a list of decimal commas
# A hyphen-minus before a number standing alone ("-3,0", "(-22.4"): the app writes "−" (U+2212).
# Not after a letter, digit or bracket ("log-odds", "e-06", "5-10", "top-5" stay).
HYPHEN_MINUS = re.compile(r"(?<![\w.,)\]}>-])-(?=\d)")
RUN_IN_SPACE = re.compile(r"(?<![\w.,−-])\d+(?:[.,]\d+)* \d+(?:[.,]\d+)*(?![\w×])")    # "28 31,66"


def _strip(text: str) -> str:
    """The text without `code`, URLs and link targets (a URL's digits are not quantities)."""
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.sub(r"(?:https?://|localhost:|/)\S*", " ", text)


def _exempt(number: str, before: str, after: str = "") -> bool:
    digits = number.replace(",", "").replace(".", "")
    if len(digits) == 4 and number.isdigit() and 1900 <= int(number) <= 2099:
        return True                                              # YEAR
    if ID_BEFORE.search(before) or before.endswith("[") or TOKEN_TEXT_AFTER.match(after):
        return True                                              # ID
    return False


def bad_numbers(text: str, lang: str) -> list[str]:
    """Every number of `text` written the wrong way for `lang` ("en" | "id"), with context."""
    text = _strip(text)
    ok = EN_OK if lang == "en" else ID_OK
    found = []
    for m in NUMBER.finditer(text):
        num = m.group(1)
        before = text[max(0, m.start() - 12):m.start()]
        integer = re.split(r"[.,]", num)[0]
        if re.fullmatch(r"\d+", num) and len(num) <= 3:
            continue
        after = text[m.end():m.end() + 16]
        if _exempt(num, before, after):
            continue
        bad = not ok.match(num)
        if not bad and re.fullmatch(r"\d{4}", integer) and not _exempt(integer, before, after):
            bad = True                                           # 4819 ms: 4 digits want a separator
        if bad:
            found.append(f"“{text[max(0, m.start() - 25):m.end() + 25]}” ({num})")
    for m in HYPHEN_MINUS.finditer(text):
        found.append(f"“{text[max(0, m.start() - 25):m.end() + 25]}” (a hyphen for a minus sign)")
    runs = [RUN_IN_SPACE] + ([RUN_IN_ID] if lang == "id" else [])
    for pattern in runs:
        for m in pattern.finditer(text):
            found.append(f"“{text[max(0, m.start() - 25):m.end() + 25]}” (numbers run together)")
    return found


def _figure_texts(spec: dict) -> list[str]:
    """Every visible text of a Plotly figure spec: titles, axes, ticks, traces, annotations."""
    out: list[str] = []

    def add(v):
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                add(x)
        elif isinstance(v, dict) and "text" in v:
            add(v["text"])

    layout = spec.get("layout", {})
    add(layout.get("title"))
    for k, v in layout.items():
        if (k.startswith("xaxis") or k.startswith("yaxis") or k.startswith("coloraxis")) and isinstance(v, dict):
            add(v.get("title"))
            add(v.get("ticktext"))
    for a in layout.get("annotations", []) or []:
        add(a.get("text"))
    for tr in spec.get("data", []):
        for key in ("name", "text", "hovertext", "customdata"):      # customdata: hover texts we format
            add(tr.get(key))
        tmpl = tr.get("hovertemplate") or tr.get("texttemplate")
        for t in (tmpl if isinstance(tmpl, list) else [tmpl]):
            if isinstance(t, str):
                out.append(re.sub(r"%\{[^}]*\}", " ", t))        # the values Plotly fills in use `separators`
        cb = (tr.get("marker") or {}).get("colorbar") or tr.get("colorbar")
        if isinstance(cb, dict):
            add(cb.get("title"))
    return out


def figure_separators(at) -> list[str | None]:
    """The `separators` layout setting of every Plotly figure on the page."""
    return [json.loads(e.proto.spec).get("layout", {}).get("separators") for e in at.get("plotly_chart")]


def rendered_texts(at) -> list[str]:
    """The visible text of an AppTest run (see the module docstring)."""
    parts = [x.value for x in at.markdown] + [x.value for x in at.title] + [x.value for x in at.subheader]
    parts += [x.value for x in at.caption] + [x.value for kind in (at.info, at.success, at.warning, at.error)
                                               for x in kind]
    for kind in ("slider", "select_slider", "selectbox", "radio", "multiselect", "number_input", "checkbox",
                 "text_input", "toggle", "button"):
        for w in getattr(at, kind, []):
            parts.append(str(getattr(w, "label", "") or ""))
            parts += [str(o) for o in (getattr(w, "options", None) or [])]
    parts += [text for w in getattr(at, "slider", []) for text in slider_texts(w)]
    for df in list(at.dataframe) + list(at.table):
        value = df.value
        parts += [str(c) for c in value.columns]
        for col in value.columns:
            if not ID_HEADER.search(str(col)):                  # ID: a column of token ids
                parts += [x for x in value[col].tolist() if isinstance(x, str)]
    for e in at.get("plotly_chart"):
        parts += _figure_texts(json.loads(e.proto.spec))
    for e in at.get("html"):                                    # st.html: token chips' hover texts
        parts += html_titles(e.proto.body)
    return [str(p) for p in parts if p]


def slider_texts(w) -> list[str]:
    """What an st.slider prints: its ends and value(s), each through its printf format (the
    browser's sprintf; Python's % reads "%d" and "%0.2f" alike). Streamlit writes no
    thousands separator and a decimal point in every language (issue 33: "4096")."""
    fmt = w.proto.format or ("%d" if all(float(v).is_integer() for v in (w.min, w.max)) else "%0.2f")
    values = w.value if isinstance(w.value, (list, tuple)) else [w.value]
    return [fmt % v for v in (w.min, w.max, *values)]


TITLE = re.compile(r'\btitle="([^"]*)"')


def html_titles(body: str) -> list[str]:
    """The hover texts (`title="…"` attributes) of an st.html body, unescaped: what a visitor
    reads when pointing at a token chip (probabilities, ranks, kept counts)."""
    return [html.unescape(m.group(1)) for m in TITLE.finditer(body or "")]
