"""Every registered page through Streamlit's AppTest (real model, no browser)."""
import pytest

from lib.concepts.catalog import CONCEPTS
from tests.app.open_page import open_page
from lib.ui.i18n import SEPARATORS, load_texts
from tests.app.number_format import bad_numbers, figure_separators, rendered_texts

pytestmark = pytest.mark.real_model
PAGES = [c for c in CONCEPTS if c.exists]

def texts_on_page(at) -> str:
    parts = [m.value for m in at.markdown] + [t.value for t in at.title] + [s.value for s in at.subheader]
    return "\n".join(str(p) for p in parts)


def test_home_page_lists_every_concept():
    at = open_page(None)
    assert not at.exception
    body = texts_on_page(at)
    assert "Gemma" in body or "LLM" in body


@pytest.mark.parametrize("lang", ["en", "id"])
def test_home_page_writes_numbers_for_the_language(lang):
    """The model's facts table too (issue 33: "Ukuran MLP 2048" beside "Kosakata 262.144")."""
    at = open_page(None, {"lang": lang})
    assert not at.exception
    bad = [b for text in rendered_texts(at) for b in bad_numbers(text, lang)]
    assert not bad, "\n".join(bad)
    # The scan takes "2048 (gelu_tanh)" for a token id and its text: read the table's values.
    import re

    cells = [row.split("|")[2] for m in at.markdown for row in str(m.value).splitlines()
             if row.startswith("| ") and row.count("|") == 3]
    assert len(cells) >= 10, cells
    assert not [c for c in cells if re.search(r"(?<![\d.,])\d{4,}(?![\d.,])", c)], cells


@pytest.mark.parametrize("concept", PAGES, ids=[c.slug for c in PAGES])
@pytest.mark.parametrize("lang", ["en", "id"])
def test_page_runs_in_both_languages(concept, lang):
    """The page as a visitor who answered its question sees it (reveal=1: the figure and the
    explanation the answer unlocks are drawn too, and are scanned with the rest)."""
    at = open_page(concept.slug, {"lang": lang, "reveal": "1"})
    assert not at.exception, [e.value for e in at.exception]
    title = load_texts(concept.slug)[lang]["title"]
    assert any(title in t.value for t in at.title)
    headers = [s.value for s in at.subheader]
    common = load_texts("common")[lang]
    for key in ("what_to_notice", "check_it", "try_this", "the_code", "sources"):
        assert common[key] in headers, key
    # Numbers written for the language everywhere (issue 33): text, tables and figures as rendered.
    bad = [b for text in rendered_texts(at) for b in bad_numbers(text, lang)]
    assert not bad, "\n".join(bad)
    assert set(figure_separators(at)) <= {SEPARATORS[lang]}, figure_separators(at)
    # The completion contract (issue 29): a finished page leaves no progress bar behind.
    assert not at.get("progress"), [p.proto for p in at.get("progress")][:2]
    # Every control recorded its range as URL values (what `python -m bench --explore` tries).
    from lib.ui.state import CONTROLS

    assert all(c["values"] or c["kind"] == "text" for c in CONTROLS.get(concept.slug, {}).values())


def test_attention_sinks_answers_another_stride_and_a_shorter_text_from_its_default_evaluation():
    """Issue 29 (no wasted work): once the default state is computed (4,096 tokens under three
    policies, rendered by the test above in this chain), a stride (read only by recompute, not
    among the default policies) computes nothing, and N = 1,024 is a slice of the evaluation
    the server holds, which the page says."""
    from lib.serving import memo

    assert not open_page("attention-sinks").exception          # the default (cached by now)
    before = memo.stats["computed"]
    at = open_page("attention-sinks", {"k": "1"})
    assert not at.exception and memo.stats["computed"] == before
    at = open_page("attention-sinks", {"N": "1024"})
    assert not at.exception and memo.stats["computed"] == before
    said = load_texts("attention-sinks")["en"]["eval_sliced"].split("{")[0]           # "The first "
    assert any(c.value.startswith(said + "1,024") and "4,096" in c.value for c in at.caption), \
        [c.value for c in at.caption]


@pytest.mark.parametrize("concept", PAGES, ids=[c.slug for c in PAGES])
def test_bad_url_parameters_give_notes_not_crashes(concept):
    at = open_page(concept.slug, {"nonsense": "1", "T": "banana", "seed": "-5", "n": "nan"})
    assert not at.exception, [e.value for e in at.exception]
    notes = " ".join(i.value for i in at.info)
    assert "nonsense" in notes


def test_an_out_of_range_number_is_clamped_with_a_note():
    at = open_page("temperature", {"n": "1e9"})
    assert not at.exception
    notes = " ".join(i.value for i in at.info)
    assert "`n=1e9`" in notes and "48" in notes, notes     # the URL's own text, as typed


def test_empty_prompt_gives_a_message():
    at = open_page("temperature", {"prompt": "   "})
    assert not at.exception
    assert any("prompt" in w.value.lower() for w in at.warning)


def test_emoji_and_non_latin_prompts():
    for text in ["🙂🚀 こんにちは", "مرحبا بالعالم", "Привет, мир", "ibu kota 🇮🇩 adalah"]:
        at = open_page("temperature", {"prompt": text})
        assert not at.exception, text


@pytest.mark.parametrize("lang,count", [("en", "1,502"), ("id", "1.502")])
def test_huge_prompt_is_truncated_with_a_note(lang, count):
    """The note writes the prompt's token count (1,500 words, BOS and one more) for the
    language: it printed "1502"."""
    at = open_page("temperature", {"prompt": "word " * 1500, "lang": lang})
    assert not at.exception
    notes = [i.value for i in at.info]
    assert any("256" in n and count in n for n in notes), notes


def test_an_english_default_prompt_says_why_under_indonesian():
    """logit-bias keeps its English default under lang=id (the model ranks ' Paris' first only in
    English): the page says so, and stops saying so once the visitor types their own prompt."""
    note = load_texts("common")["id"]["english_default"]
    at = open_page("logit-bias", {"lang": "id"})
    assert not at.exception
    assert note in [c.value for c in at.caption]
    at = open_page("logit-bias", {"lang": "id", "prompt": "Ibu kota Indonesia adalah"})
    assert not at.exception
    assert note not in [c.value for c in at.caption]


def test_indonesian_float_sliders_write_decimal_commas_on_the_same_grid():
    """Streamlit's slider prints 0.85 in every language; under lang=id a float control is a
    select_slider over the same steps labelled 0,85, and a URL value between steps snaps."""
    at = open_page("temperature", {"lang": "id", "T": "0.83"})
    assert not at.exception, [e.value for e in at.exception]
    s = at.select_slider(key="temperature.T")
    assert s.value == 0.85
    assert "0,85" in s.options and "0.85" not in s.options and len(s.options) == 61     # 0..3 by 0.05
    en = open_page("temperature", {"T": "0.85"})
    assert not en.exception
    assert en.slider(key="temperature.T").value == 0.85


@pytest.mark.parametrize("slug", ["beam-search", "logit-bias", "stable-softmax"])
def test_float_sliders_show_the_same_decimals_in_both_languages(slug):
    """Issue 33: beam-search's temperature read 1.00 in English and 1,0 in Indonesian (logit
    bias -3.00 / -3,0, the softmax shift 0.00 / 0). A float slider's ends and value read the
    same in both languages but for the decimal separator."""
    en, id_ = open_page(slug), open_page(slug, {"lang": "id"})
    assert not en.exception and not id_.exception
    swap = str.maketrans({".": ",", ",": "."})
    by_key = {w.key: w for w in id_.select_slider}
    floats = [w for w in en.slider if not w.proto.format.endswith("d")]
    assert floats
    for w in floats:
        shown = [(w.proto.format % v).translate(swap) for v in (w.min, w.max, w.value)]
        options = by_key[w.key].options
        assert (shown[0], shown[1]) == (options[0], options[-1]), (w.key, shown, options[:2])
        assert shown[2] in options, (w.key, shown[2])


def test_padding_mask_table_keeps_two_significant_digits():
    """Issue 33: padding-mask's revealed table wrote 0,0001 beside 0,00014 (one significant
    digit beside two). Every cell but an exact 0 has two significant digits, in Indonesian."""
    at = open_page("padding-mask", {"lang": "id", "reveal": "1"})
    assert not at.exception, [e.value for e in at.exception]
    texts = load_texts("padding-mask")["id"]
    df = at.dataframe[0].value
    for col in (texts["col_hidden"], texts["col_logit"]):
        for cell in df[col]:
            digits = cell.replace(",", "").replace(".", "").split("e")[0].lstrip("0−-")
            assert cell == "0" or len(digits) == 2, (col, list(df[col]))
