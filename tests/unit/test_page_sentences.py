"""Sentences that state numbers: each is rendered from the same numbers the page computes, in
both languages, and the numbers it states are read back and checked against each other (issue
33: "8 chunks adds 8 steps" next to a product of 7 steps; a count of hypotheses that the chart
did not draw). Fast: no model."""
import re

import pytest

from lib.ui.i18n import Texts

LANGS = ("en", "id")


def numbers(text: str, lang: str) -> list[float]:
    """Every number in `text`, read with the language's separators (en 2,140.5; id 2.140,5)."""
    group, dec = (",", ".") if lang == "en" else (".", ",")
    found = re.findall(r"\d+(?:[" + re.escape(group) + r"]\d{3})*(?:" + re.escape(dec) + r"\d+)?", text)
    return [float(x.replace(group, "").replace(dec, ".")) for x in found]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("L,chunk,a,d", [(1000, 128, 0.1123, 0.1937), (512, 512, 0.09, 0.2),
                                         (300, 64, 0.0504, 0.0716)])
def test_chunked_prefill_cpu_vs_gpu_counts_the_extra_steps_it_multiplies(lang, L, chunk, a, d):
    from lib.concepts.chunked_prefill.narrate import chunking_cost

    c = chunking_cost(a, d, L, chunk)
    assert c["k"] == -(-L // chunk) and c["extra_steps"] == c["k"] - 1
    text = Texts("chunked-prefill", lang)("cpu_gpu", a=c["a_ms"], b=1.5, c=chunk, cc=123.0, k=c["k"],
                                          e=c["extra_steps"], d=c["d_ms"], extra=c["extra_ms"])
    m = re.search(r"(\d+) (?:chunks adds|potongan menambah) (\d+) (?:steps|langkah)", text)
    assert m, text
    k, e = int(m.group(1)), int(m.group(2))
    assert (k, e) == (c["k"], k - 1)
    prod = re.search(r"≈ (\d+) × \(([\d.,]+) \+ ([\d.,]+)\) ms = ([\d.,]+) ms", text)
    assert prod, text
    e2, a_ms, d_ms, extra = numbers(prod.group(0), lang)
    assert e2 == e and extra == e2 * (a_ms + d_ms), text       # the product of the numbers it shows
    assert a_ms == round(a * 1000) and d_ms == round(d * 1000)
