"""The rendered-number scan of tests/app/number_format.py catches what issue 33 found, and passes
numbers written correctly (fast: no model, no page; the AppTest of every page applies it)."""
import re

import pytest

from tests.app.number_format import bad_numbers

WRONG = [("Langkah 13 (4819 → 5.281 ms", "id"), ("Step 13 (1224 → 1,672 ms", "en"), ("(17, 19,3 dtk)", "id"),
         ("4 sink + 28 31,66", "id"), ("4 sinks + 28 31.66", "en"), ("p = 0.5", "id"), ("p = 0,5", "en"),
         ("1,000,000 token", "id"), ("12345 tokens", "en"), ("12345 token", "id"), ("1.5×", "id"),
         ("0.1807200.0701460.036788", "en"),
         ("b = -3,0", "id"), ("(-22.4 → 1.5)", "en"), ("T = 2: -3", "en"), ("p = 0.943", "id"), ("p = 0,943", "en")]
RIGHT = [("Langkah 13 (4.819 → 5.281 ms", "id"), ("Step 13 (1,224 → 1,672 ms", "en"), ("(17; 19,3 dtk)", "id"),
         ("12.345 token", "id"), ("12,345 tokens", "en"), ("0,543", "id"), ("0.543", "en"), ("(2023)", "en"),
         ("token 2364", "id"), ("int8, fp16, 2ⁿ", "id"), ("p = 0,05; α = 1,5", "id"), ("2 × 18 lapisan", "id"),
         ("http://localhost:8625/temperature?T=0.5", "id"), ("`x = 0.5`", "id"), ("262.144 token", "id"),
         ("262,144 tokens", "en"), ("−3,5", "id"), ("[0.5, 1]", "en"), ("lapisan 5, 11, 17", "id"), ("L = 5", "en"),
         ("Token ids that end a hypothesis: 1 (<eos>), 236761 (.), 236881 (?)", "en"), ("[arXiv 1706.03762], §3.2.1", "id"),
         ("kanal 1634 (1,20)", "id"), ("channel 1634 (1.20)", "en"),
         ("b = −3,0; log-odds, top-5, 2.5e−06, 5-10", "id")]


@pytest.mark.parametrize("text,lang", WRONG)
def test_a_wrongly_written_number_is_caught(text, lang):
    assert bad_numbers(text, lang), text


@pytest.mark.parametrize("text,lang", RIGHT)
def test_a_correctly_written_number_passes(text, lang):
    assert not bad_numbers(text, lang), (text, bad_numbers(text, lang))


def test_token_chip_hover_texts_are_scanned():
    """st.html bodies: the token chips' `title` attributes (hover texts) are read, unescaped."""
    from tests.app.number_format import html_titles

    body = ('<div class="token-view"><span title="␣Paris: akhir 0.943, model 0,901, peringkat 1&#10;'
            '  ␣Lyon  model 0,012 → akhir 0,010" style="background:#8f8">␣Paris</span>'
            '<span title="#3">x</span></div>')
    titles = html_titles(body)
    assert titles[0].startswith("␣Paris: akhir 0.943") and "\n" in titles[0] and titles[1] == "#3"
    assert [b for t in titles for b in bad_numbers(t, "id")] == ["“␣Paris: akhir 0.943, model 0,901, peringkat ” (0.943)"]


def test_a_column_of_small_values_keeps_the_same_significant_digits():
    """Issue 33: padding-mask's table wrote 0.0001 beside 0,00014 (".2g" drops trailing zeros).
    `significant_spec` keeps two significant digits, written in the language's separators."""
    from lib.concepts.plot_marks import significant_spec
    from lib.ui.i18n import format_number

    def shown(v, lang="id"):
        return format_number(v, significant_spec(v), lang)

    assert [shown(v) for v in (0.0001, 0.00014, 0.0012, 3.5, 35.2, 0.0)] == \
        ["0,00010", "0,00014", "0,0012", "3,5", "35", "0"]
    assert shown(0.0001, "en") == "0.00010" and shown(2.5e-6, "en") == "2.5e−06"
    assert not [b for v in (0.0001, 0.00014, 12.25, 1234.5) for b in bad_numbers(shown(v), "id")]


def test_an_english_s_in_brackets_follows_the_count_before_it():
    """Issue 33 re-look: a presenter-view heading read "1 shared key/value head(s)"."""
    from lib.ui.i18n import Texts, plurals

    assert Texts("gqa", "en")("maps_title", H=4, Hkv=1) == "4 query heads, 1 shared key/value head"
    assert Texts("gqa", "en")("maps_title", H=8, Hkv=2).endswith("2 shared key/value heads")
    assert plurals("It changes 1 time(s); 12 flip(s); on 1 biased token(s), T = 2; 1,234 token(s)") == \
        "It changes 1 time; 12 flips; on 1 biased token, T = 2; 1,234 tokens"
    assert plurals("head(s) of a layer") == "head(s) of a layer"          # no count: left as written
    for name in ("beam-search", "speculative-acceptance", "gqa", "logit-bias", "top-k-top-p"):
        for key, text in Texts(name, "en").table.items():                  # a verb after a count of one
            assert not re.search(r"\(s\)[^.;]{0,30}\b(were|are|have)\b", text), (name, key, text)


@pytest.mark.parametrize("lang", ["en", "id"])
def test_beam_search_writes_the_finished_hypotheses_probability_as_a_plain_number(lang):
    """Issue 33 re-look: the projected sentence read 'Σ e^(Σ log p) = 4,168e-02' (a probability,
    not a rounding error: students read it as a decimal)."""
    from lib.ui.i18n import Texts

    line = Texts("beam-search", lang)("prob_line", n=9, P=0.0416806, a=1, Q=3.367)
    assert ("0.04168" if lang == "en" else "0,04168") in line and "e-0" not in line, line


@pytest.mark.parametrize("lang", ["en", "id"])
def test_sliding_window_answer_does_not_write_a_lost_facts_probability_as_zero(lang):
    """Issue 33 re-look: 'rank 28,831 with every layer at W (p = 0.000); without the fact
    p = 1.1e-07': the lost fact's p (4e-09, below the no-fact line on the chart) read as zero."""
    from lib.ui.i18n import Texts

    line = Texts("sliding-window", lang)("predict_fact_why", d=192, own=1, p_own=0.725, hyb=1, p_hyb=0.694,
                                        all=28831, p_all=4.2e-9, p0=1.1e-7)
    assert "0.000)" not in line and "0,000)" not in line, line
    assert ("4.2e−09" if lang == "en" else "4,2e−09") in line
    assert ("0.725" if lang == "en" else "0,725") in line


@pytest.mark.parametrize("lang", ["en", "id"])
def test_beam_search_step_candidates_are_ranked_not_numbered_like_hypotheses(lang):
    """Issue 33 re-look: on one screen '#4' was the 4th candidate of step 16 in the step list and
    hypothesis #4 in the finished table below it (another sequence). '#k' names a hypothesis only."""
    from lib.ui.i18n import Texts

    line = Texts("beam-search", lang)("step_event", r=4, prefix="…world", tok="␣that", lp=-0.292, cum=-15.398,
                                     fate="x")
    assert "#4" not in line and ("rank 4" if lang == "en" else "peringkat 4") in line


@pytest.mark.parametrize("lang", ["en", "id"])
def test_a_negative_number_is_written_with_one_minus_sign(lang):
    """Issue 33 re-look: "-3,0" and "-22,4" (hyphen-minus) beside "−3,5" (the minus sign) on the
    same pages. Every displayed number (format_number, t.num, t(...)'s fields) writes U+2212."""
    from lib.ui.i18n import MINUS, Texts, format_number

    t = Texts("logit-bias", lang)
    shown = [format_number(-3.0, ".1f", lang), t.num(-22.4, ".1f"), t.num(-1234567, ","), t.num(-2.5e-6, ".2g"),
             t.num(-3, "+g"), t.num(-0.5), t("check_order_t_detail", T=2.0, a=-1.5, ma=-1.5, b=-3.0, mb=-3.0, tol=1e-5)]
    assert not [s for s in shown if re.search(r"-\d", s)], shown     # a hyphen-minus before a digit
    assert shown[0] == (MINUS + ("3.0" if lang == "en" else "3,0")) and shown[1].startswith(MINUS + "22")
    # The URL parameter a visitor typed is quoted as the URL writes it (machine-readable), the rest shown.
    note = Texts("common", lang)("note_clamped", name="b", value="-12", lo=-10.0, hi=10.0, used=-10.0)
    assert "`b=-12`" in note and f"[{MINUS}10" in note and "-10" not in note, note


@pytest.mark.parametrize("lang", ["en", "id"])
def test_a_number_inside_code_is_written_as_python_writes_it(lang):
    """beam-search's check names `generate(num_beams=4, length_penalty={a:g}, ...)`: with α = −1
    (the slider's low end) the code read `length_penalty=−1`, and in Indonesian `0,5`, which no
    one can paste. Inside a code span a number stays Python's; outside it is the language's."""
    from lib.ui.i18n import MINUS, Texts

    text = Texts("beam-search", lang)("check_generate", b=4, a=-1.5, es=False)
    assert "`generate(num_beams=4, length_penalty=-1.5, early_stopping=False, do_sample=False)`" in text, text
    note = Texts("common", lang)("note_clamped", name="a", value=-1.5, lo=-1.0, hi=3.0, used=-1.0)
    assert "`a=-1.5`" in note and f"{MINUS}1" in note.split("`")[2], note
    assert Texts("logit-bias", lang)("change_title", b=-0.5, n=1, T=2.0).count(MINUS + ("0.5" if lang == "en" else "0,5")) == 1
