"""The model-check page (issue 32) through AppTest: one render in Indonesian (the language most
likely to break a format), every foundation check passes and names its reference, and the long
prompt past the 512-token window was checked."""
import pytest

from lib.concepts.check_result import ICONS
from lib.ui.i18n import load_texts
from tests.app.number_format import bad_numbers, rendered_texts
from tests.app.open_page import all_text, open_page

pytestmark = pytest.mark.real_model   # ~20 s: 18 transformers layers on the prompt + 2 on 600 tokens


def test_model_check_page_all_green_in_indonesian():
    at = open_page("model-check", {"lang": "id"})
    assert not at.exception, [e.value for e in at.exception]
    text = all_text(at)
    common, mc = load_texts("common")["id"], load_texts("model-check")["id"]
    assert mc["title"] in "\n".join(x.value for x in at.title)
    verdicts = [line for line in text.splitlines() if line.startswith(tuple(ICONS.values()))]
    assert len(verdicts) >= 8, verdicts                       # 3 config + 2 vocab + all layers + 2 long
    assert all(v.startswith(ICONS["pass"]) for v in verdicts), verdicts
    assert common["reference_missing"] not in text
    assert mc["ref_layer"] in text and mc["ref_gguf"] in text
    assert common["model_check_link"] not in text            # the page does not link itself
    # Numbers written for the language (issue 33: "262144" for the vocabulary, "600 token").
    bad = [b for part in rendered_texts(at) for b in bad_numbers(part, "id")]
    assert not bad, "\n".join(bad)
