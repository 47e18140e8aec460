"""What a number slider prints, in both languages (issue 33; fast: a bare AppTest script, no model).

Streamlit's st.slider prints with a printf format: no thousands separator and a decimal point in
every language. UrlState.number_slider therefore writes whole numbers of 4+ digits on a
select_slider ("4,096" / "4.096"), Indonesian decimals on a select_slider ("1,0"), and gives
English floats the same number of decimals as Indonesian ("1.0", not Streamlit's default "1.00")."""
import pytest
from streamlit.testing.v1 import AppTest

from lib.ui.state import slider_digits


# name: (lo, hi, default, step) as the pages give them (attention-sinks N, beam-search T,
# logit-bias b, stable-softmax's shift, a float with Streamlit's default step, an int, a
# step-1 range of 100,000 values).
SLIDERS = {"N": (128, 4096, 4096, 64), "T": (0.1, 2.0, 1.0, 0.1), "b": (-10.0, 10.0, -3.0, 0.5),
           "c": (-150.0, 150.0, 0.0, 1.0), "p": (0.05, 1.0, 0.9, None), "k": (1, 200, 40, None),
           "w": (1, 100_000, 5_000, None)}


def _script():
    import streamlit as st

    from lib.ui.i18n import Texts
    from lib.ui.state import UrlState
    from tests.unit.test_slider_format import SLIDERS

    s = UrlState("demo", [], Texts("common", st.query_params.get("lang", "en")))
    for name, (lo, hi, default, step) in SLIDERS.items():
        s.number_slider(name, name, lo, hi, default, step=step)


def _run(lang: str) -> AppTest:
    at = AppTest.from_function(_script)
    at.query_params["lang"] = lang
    return at.run()


def _shown(at: AppTest, name: str) -> str:
    """The value as the visitor reads it: the slider's printf format, or the select_slider's label."""
    key = f"demo.{name}"
    for w in at.slider:
        if w.key == key:
            return w.proto.format % w.value
    w = at.select_slider(key=key)
    lo, _, _, step = SLIDERS[name]
    return w.options[round((w.value - lo) / (step or (1 if isinstance(lo, int) else 0.01)))]


def test_slider_digits_follow_the_format_then_the_step():
    assert [slider_digits(s) for s in (0.05, 0.1, 0.25, 0.5, 1.0, None)] == [2, 1, 2, 1, 0, 2]
    assert slider_digits(0.1, "%.3f") == 3


@pytest.mark.parametrize("name,en,id_", [("N", "4,096", "4.096"), ("T", "1.0", "1,0"), ("b", "−3.0", "−3,0"),
                                         ("c", "0", "0"), ("p", "0.90", "0,90"), ("k", "40", "40")])
def test_a_slider_reads_the_same_in_both_languages(name, en, id_):
    """Issue 33: beam-search's T read 1.00 / 1,0, logit-bias's bias -3.00 / -3,0, the softmax
    shift 0.00 / 0, attention-sinks' N 4096 in both. A bias below zero is written with the
    app's minus "−" in both languages (issue 33's re-look: printf's hyphen "-3.0")."""
    a, b = _run("en"), _run("id")
    assert not a.exception and not b.exception
    assert (_shown(a, name), _shown(b, name)) == (en, id_)


def test_a_grouped_slider_keeps_its_values_and_snaps_a_url_value():
    at = AppTest.from_function(_script)
    at.query_params["N"] = "1000"                                 # between the 64-steps from 128
    at.run()
    w = at.select_slider(key="demo.N")
    assert w.value == 1024 and w.options[0] == "128" and len(w.options) == (4096 - 128) // 64 + 1


def test_a_step_one_range_of_thousands_stays_a_plain_slider():
    """A select_slider sends every option to the browser: 100,000 of them would be a 1 MB page
    per rerun. Past MAX_GRID steps the number stays Streamlit's own slider (ungrouped)."""
    from lib.ui.state import MAX_GRID

    at = _run("id")
    assert not at.exception
    assert "demo.w" in [w.key for w in at.slider] and 100_000 > MAX_GRID
    assert all(len(w.options) <= MAX_GRID + 1 for w in at.select_slider)
