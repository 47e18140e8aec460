"""Open one page of the app through Streamlit's AppTest, as a first visit with URL parameters."""
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

TIMEOUT = 600     # seconds for one script run: attention-sinks cold (4,096 tokens under every policy) took 183 s in CI


def open_page(slug: str | None, params: dict | None = None) -> AppTest:
    """app.py run once with `params` in the URL, then switched to pages/<slug>.py (None: home)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    at.run()
    if slug:
        at.switch_page(f"pages/{slug}.py")
        at.run()
    return at


def all_text(at) -> str:
    """Every markdown, title, subheader, caption, info and success text of the page."""
    parts = ([m.value for m in at.markdown] + [x.value for x in at.title] + [x.value for x in at.subheader]
             + [x.value for x in at.caption] + [x.value for x in at.info] + [x.value for x in at.success])
    return "\n".join(str(p) for p in parts)
