"""A colour named in a sentence is the colour drawn (issue 33): "the red residual" under orange
bars sends a class looking for the wrong bars.

Each case reads the colour where the figure code takes it (a module constant, or the colour a page
passes for a series), names it by its hue, and requires that name — in both languages — in the
sentence that points at it."""
import colorsys
import re
from pathlib import Path

import pytest

from lib.concepts.prefix_caching import figures as prefix_figures
from lib.ui.i18n import load_texts

ROOT = Path(__file__).resolve().parents[2]
NAMES = {"red": "merah", "orange": "oranye", "green": "hijau", "blue": "biru", "grey": "abu-abu"}


def colour_name(hex_colour: str) -> str:
    """The everyday name of a colour, by hue (low saturation: grey)."""
    r, g, b = (int(hex_colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4))
    h, _, s = colorsys.rgb_to_hls(r, g, b)
    if s < 0.15 or max(r, g, b) - min(r, g, b) < 0.08:
        return "grey"
    deg = h * 360
    if deg < 15 or deg >= 340:
        return "red"
    if deg < 45:
        return "orange"
    if 75 <= deg < 170:
        return "green"
    if 190 <= deg < 260:
        return "blue"
    return "other"


def test_colour_names_by_hue():
    assert [colour_name(c) for c in ("#E45756", "#d62728", "#de2d26")] == ["red"] * 3
    assert [colour_name(c) for c in ("#e6550d", "#ff7f0e", "#ffd9b3")] == ["orange"] * 3
    assert [colour_name(c) for c in ("#54A24B", "#31a354", "#d6f5d6")] == ["green"] * 3
    assert [colour_name(c) for c in ("#3182bd", "#1f77b4", "#9ecae1")] == ["blue"] * 3
    assert colour_name("#BBBBBB") == "grey"


def page_colour(slug: str, key: str) -> str:
    """The colour a page passes for the series labelled t("<key>"...)."""
    src = (ROOT / "pages" / f"{slug}.py").read_text()
    m = re.search(rf't\("{key}"[^)]*\): "(#[0-9a-fA-F]{{6}})"', src)
    assert m, (slug, key)
    return m.group(1)


# (page texts, text key, colour, words the sentence uses just before/after the colour)
CASES = [
    ("prefix-caching", "try_1", prefix_figures.MISS, "blocks of B"),
    ("prefix-caching", "diff_caption", "#ffd9b3", "from the first differing token"),
    ("speculative-acceptance", "notice_1", lambda: page_colour("speculative-acceptance", "s_res"), "residual"),
    ("speculative-acceptance", "alpha_line", lambda: page_colour("speculative-acceptance", "s_res"), "residual"),
    ("speculative-acceptance", "notice_1", lambda: page_colour("speculative-acceptance", "s_min"), "min(p, q)"),
]


@pytest.mark.parametrize("slug,key,colour,what", CASES, ids=[f"{c[0]}:{c[1]}:{c[3]}" for c in CASES])
def test_the_sentence_names_the_colour_drawn(slug, key, colour, what):
    colour = colour() if callable(colour) else colour
    name = colour_name(colour)
    texts = load_texts(slug)
    assert name in texts["en"][key].lower(), (slug, key, colour, name, texts["en"][key])
    assert NAMES[name] in texts["id"][key].lower(), (slug, key, colour, NAMES[name], texts["id"][key])


def test_the_prefix_chips_are_the_colours_the_caption_names():
    """diff_html's chips: green inside the common prefix, orange after it (read from the HTML)."""
    html = prefix_figures.diff_html(["a", "b"], [True, False], 16)
    inside, after = re.findall(r"background:(#[0-9a-fA-F]{6})", html)
    assert (colour_name(inside), colour_name(after)) == ("green", "orange")
    assert after == "#ffd9b3"
