"""bench/classroom.py compares each class session's generated tokens with the same prompt alone:
what it compares is the visible text of the token views, not their tooltips' probabilities."""
from bench.classroom import token_views
from bench.visitor import Visit


def _view(tokens, tip):
    spans = "".join(f'<span title="{tip}" style="background:#fff;cursor:help">{t}</span>' for t in tokens)
    return f'<div style="font-family:monospace"><span style="color:#888">The capital of Peru is</span>{spans}</div>'


def test_token_views_compare_the_tokens_and_ignore_the_tooltips():
    a = Visit("temperature", "", htmls=[_view([" Lima", "."], "p = 0.51 &gt; 0.50"), "<p>not a token view</p>"])
    b = Visit("temperature", "", htmls=[_view([" Lima", "."], "p = 0.52")])
    c = Visit("temperature", "", htmls=[_view([" Cusco", "."], "p = 0.51 &gt; 0.50")])
    assert token_views(a) == ["The capital of Peru is Lima."]
    assert token_views(a) == token_views(b) != token_views(c)
    assert token_views(Visit("temperature", "")) == []
