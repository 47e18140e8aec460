"""The language mechanism: every text file has both languages, same keys, real translations."""
import re

import pytest

from lib.concepts.catalog import CONCEPTS
from lib.ui.i18n import TEXT_DIR, load_texts

FILES = sorted(p.stem for p in TEXT_DIR.glob("*.toml"))
SAME_OK = {"model", "prompt_label", "default_prompt", "concept_gqa", "concept_padding-mask", "concept_prefix-caching",
           "concept_paged-attention", "concept_attention-sinks", "preset_capital", "preset_story", "preset_code",
           "preset_id", "fig_rank_y", "lbl_model", "fact_name",
           # default prompts: the same in both languages, so both show the same numbers (test_same_defaults.py)
           "default_text", "prompt_default", "default_a", "default_b", "req_b", "req_c", "req_d"}


@pytest.mark.parametrize("name", FILES)
def test_both_languages_same_keys_and_placeholders(name):
    data = load_texts(name)
    assert set(data["en"]) == set(data["id"])
    for k, en in data["en"].items():
        assert set(re.findall(r"{(\w+)", en)) == set(re.findall(r"{(\w+)", data["id"][k])), (name, k)


@pytest.mark.parametrize("name", FILES)
def test_indonesian_is_not_left_in_english(name):
    data = load_texts(name)
    same = [k for k, en in data["en"].items() if en == data["id"][k] and len(en) > 25 and k not in SAME_OK
            and not k.startswith("source_")]
    assert not same, same


@pytest.mark.parametrize("concept", [c for c in CONCEPTS if c.exists], ids=lambda c: c.slug)
def test_every_page_has_the_template_texts(concept):
    en = load_texts(concept.slug)["en"]
    assert {"title", "intro"} <= set(en)
    assert any(k.startswith("notice_") for k in en)
    assert 2 <= sum(k.startswith("try_") for k in en) <= 4
    assert any(k.startswith("source_") for k in en)
