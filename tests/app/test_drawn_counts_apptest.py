"""Counts a figure's title states against the items it draws (issue 33, the lecturer's re-look):
a title that counts over the whole vocabulary while the chart draws only the most likely
tokens must say how many it draws, or the students count the bars and find the sentence false."""
import json
import re

import pytest

from tests.app.open_page import open_page
from tests.app.test_same_numbers_apptest import numbers

pytestmark = pytest.mark.real_model


def count(values) -> int:
    """How many values an array of a figure's JSON holds: a list, or Plotly's typed array
    ({"dtype": "i8", "bdata": base64})."""
    if isinstance(values, dict):
        import base64

        import numpy as np

        return len(np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"])))
    return len(values)


def figures(at) -> list[dict]:
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


@pytest.mark.parametrize("lang", ["en", "id"])
def test_top_k_top_p_kept_sets_says_how_many_of_the_counted_tokens_it_draws(lang):
    at = open_page("top-k-top-p", {"lang": lang, "reveal": "1"})     # the figure answers "nucleus"
    assert not at.exception
    from lib.ui.i18n import load_texts

    head = load_texts("top-k-top-p")[lang]["sets_title"].split(":")[0]
    titles = [m.value for m in at.markdown if head in str(m.value)]
    assert len(titles) == 1, titles
    counted = sum(numbers(re.sub(r"<[^>]+>", "", titles[0].split(":", 1)[1]), lang))     # both + only k + only p
    kinds = {load_texts("top-k-top-p")[lang][f"sets_{k}"] for k in ("both", "only_k", "only_p", "neither")}
    sets = [s for s in figures(at) if any(tr.get("type") == "bar" and tr.get("name") in kinds for tr in s["data"])]
    assert len(sets) == 1
    drawn = sum(count(tr["x"]) for tr in sets[0]["data"])
    kept_drawn = sum(count(tr["x"]) for tr in sets[0]["data"] if tr.get("marker", {}).get("color") != "#BBBBBB")
    x_title = sets[0]["layout"]["xaxis"]["title"]["text"]
    if counted > kept_drawn:               # the default: 136 kept, 60 bars drawn
        assert drawn in numbers(x_title, lang), (counted, drawn, x_title)
