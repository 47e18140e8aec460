"""THE term list (assets/text/terms.toml, issue 33): one Indonesian term per concept on every page.

Every [id] text of assets/text/*.toml is read as the visitor sees it (`code`, link targets and
{placeholders} removed) and must not contain any rival wording the list names: "decoding
greedy" where the list says "dekoding greedy", "prefix" where it says "prefiks", "request" where
it says "permintaan", an Indonesian affix glued to an English word ("men-decode")."""
import re

import pytest

from lib.ui import glossary
from lib.ui.i18n import TEXT_DIR, load_texts

TERMS = load_texts("terms")
RIVALS = {k: [re.compile(p, re.I) for p in v] for k, v in TERMS["rivals"].items()}
FILES = sorted(p.stem for p in TEXT_DIR.glob("*.toml") if p.stem != "terms")


def visible(text: str) -> str:
    """What a reader sees of a text: no `code`, no link targets, no URLs, no {placeholders}."""
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"https?://\S+", " ", text)
    return re.sub(r"\{[^{}]*\}", " ", text)


def test_every_rival_belongs_to_a_term_and_spares_the_term_itself():
    for key, patterns in RIVALS.items():
        assert key in TERMS["id"] or key == "mixed_grammar", key
        if key in TERMS["id"]:
            for p in patterns:
                assert not p.search(TERMS["id"][key]), (key, p.pattern)


def test_the_rivals_catch_what_they_are_for():
    """The patterns are not vacuous: each sample of the issue is caught, its fix is not."""
    caught = ["4 request sudah sedang decode", "masing-masing men-decode satu token", "mem-prefill",
              "dibandingkan decoding greedy", "memakai ulang prefix bersama", "Timeline: titik",
              "garis hasil fitting", "token teratas ber-p = 0,5", "Mengkuantisasi cache",
              "baris ber-mask", "Padding yang di-mask", "tarikan ber-seed", "nilai di-clip",
              "seluruh awalannya", "keluaran atensi engine", "Pada heatmap", "Invarian allocator",
              "alih-alih menggusur", "galat clipping", "token per pemanggilan target",
              "ambang underflow", "baris packed", "kode terpadatkan", "saat dekoding: bandwidth memori",
              "Loss per token", "dibungkus ke ±π"]
    fine = ["4 permintaan sudah dalam fase decode", "Prefix caching menyimpan", "dekoding greedy",
            "prefiks bersama", "linimasa", "garis regresi", "Menguantisasi cache", "langkah decode",
            "baris dengan mask", "tarikan dengan seed tetap", "nilai dipotong", "posisi ke-k",
            "kanal-kanal", "masing-masing", "keluaran atensi mesin", "pemotongan (clipping)",
            "peta panas", "alokator", "membuang entri", "ambang luapan bawah", "baris terkemas",
            "kode terkemas", "cache padat", "lebar pita memori (bandwidth)", "NLL per token",
            "dilipat ke rentang ±π"]
    every = [p for ps in RIVALS.values() for p in ps]
    for text in caught:
        assert any(p.search(text) for p in every), text
    for text in fine:
        assert not any(p.search(text) for p in every), text


@pytest.mark.parametrize("name", FILES)
def test_indonesian_texts_use_the_term_list_not_its_rivals(name):
    found = []
    for key, text in load_texts(name)["id"].items():
        if key.startswith("source_"):     # titles of English papers and docs, cited as published
            continue
        seen = visible(text)
        for term, patterns in RIVALS.items():
            for p in patterns:
                m = p.search(seen)
                if m:
                    found.append(f"{name}:{key}: “{seen[max(0, m.start() - 30):m.end() + 30]}” ({term}: {p.pattern})")
    assert not found, "\n".join(found)


def test_the_glossary_takes_its_terms_from_the_list_and_is_bilingual():
    assert glossary.term("greedy", "id") == TERMS["id"]["greedy"] == "dekoding greedy"
    assert glossary.term("greedy", "en") == TERMS["en"]["greedy"]
    # In Indonesian each entry shows the English term beside it, unless it already holds every word.
    assert glossary.english_beside("greedy", "id") == "greedy decoding"
    assert glossary.english_beside("layer", "id") == "layer"
    assert glossary.english_beside("kv_cache", "id") == ""
    assert glossary.english_beside("gqa", "id") == ""            # "GQA (grouped-query attention)"
    assert glossary.english_beside("greedy", "en") == ""
    rows = glossary.term_list()
    assert len(rows) == len(TERMS["en"]) and ("word_request", "request", "permintaan") in rows
