"""The same defaults, and so the same numbers, in both languages (issue 33: kv-quantization's
Indonesian default text gave 59 cached tokens and 8.0x, the English one 81 and 20.7x, so the
projector and the students' phones disagreed). For EVERY page file, every default that reaches
a URL-bound control or the prompt box is read from the page file itself (AST): a literal is
the same in both languages by construction; a text looked up with t("key") / c("key") / page.t /
page.c must be identical in [en] and [id]; and no default may depend on the language."""
import ast
from pathlib import Path

import pytest

from lib.ui.i18n import load_texts

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "pages").glob("*.py"))
# positional index of the default in page.state.<widget>(name, label, ...) (lib/ui/state.py)
DEFAULT_AT = {"number_slider": 4, "select": 3, "multiselect": 3, "checkbox": 2, "text": 2, "integer": 4}
NOT_DEFAULTS = {"label", "help", "format_func", "container", "fmt", "step", "horizontal", "radio", "max_chars",
                "height", "area", "max_tokens", "options", "lo", "hi"}


def _is(node, *names) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in names


def _default_nodes(call: ast.Call) -> list[ast.AST]:
    """The argument expressions of a control call that decide its default value."""
    f = call.func
    if _is(f, "prompt"):                                               # page.prompt(default=...)
        return [k.value for k in call.keywords if k.arg == "default"]
    if _is(f, *DEFAULT_AT) and _is(f.value, "state"):                  # page.state.<widget>(...)
        i = DEFAULT_AT[f.attr]
        out = [k.value for k in call.keywords if k.arg == "default"]
        return out + ([call.args[i]] if len(call.args) > i else [])
    return []


def _text_lookups(node: ast.AST):
    """(table, key) of every t("key") / c("key") / page.t("key") / page.c("key") inside node."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Constant) \
                and isinstance(n.args[0].value, str):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in ("t", "c"):
                yield name, n.args[0].value


def _defaults(page: Path):
    tree = ast.parse(page.read_text())
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            for d in _default_nodes(n):
                yield n, d


def test_the_checker_sees_the_defaults_it_must_compare():
    """The AST reading finds the prompt and text defaults of the pages that have them (so the
    test below cannot pass by finding nothing)."""
    found = {p.stem: {k for _, d in _defaults(p) for _, k in _text_lookups(d)} for p in PAGES}
    assert "default_text" in found["kv-quantization"]
    assert {"default_a", "default_b"} <= found["prefix-caching"]
    assert "default_prompt" in found["paged-attention"] and "default_word" in found["life-of-a-token"]
    assert sum(len(v) for v in found.values()) >= 12


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_every_default_is_the_same_in_both_languages(page):
    texts = {"t": load_texts(page.stem) if (ROOT / "assets/text" / f"{page.stem}.toml").exists() else None,
             "c": load_texts("common")}
    for call, d in _defaults(page):
        src = ast.get_source_segment(page.read_text(), call)
        names = {n.id for n in ast.walk(d) if isinstance(n, ast.Name)} | \
                {n.attr for n in ast.walk(d) if isinstance(n, ast.Attribute)}
        assert "lang" not in names, f"{page.stem}: a default depends on the language: {src}"
        for table, key in _text_lookups(d):
            data = texts[table]
            assert data is not None, (page.stem, key)
            assert data["en"][key] == data["id"][key], \
                f"{page.stem}: default {table}('{key}') differs between [en] and [id] ({src[:80]}…)"
    # the prompt box without a default uses the common default prompt: the same in both
    assert texts["c"]["en"]["default_prompt"] == texts["c"]["id"]["default_prompt"]
