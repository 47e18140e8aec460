"""The generated-text view shared by the decoding pages: each token coloured by the
probability it had when it was chosen; hovering shows the top alternatives at that step."""
from __future__ import annotations

import html

from lib.tokens import token_text


def _colour(p: float) -> str:
    """Low probability -> warm red, high -> cool green (alpha keeps text readable)."""
    r, g = int(230 * (1 - p) + 40 * p), int(80 * (1 - p) + 180 * p)
    return f"rgba({r},{g},90,0.35)"


def tokens_html(tokenizer, prompt_text: str, steps, labels: dict[str, str]) -> str:
    """steps: StepRecord list. labels: {"model": ..., "final": ..., "rank": ...}."""
    spans = [f'<span style="color:#888">{html.escape(prompt_text)}</span>']
    for s in steps:
        alts = "\n".join(f"{token_text(tokenizer, i)!s:>14}  {labels['model']} {pm:.3f} → "
                         f"{labels['final']} {pf:.3f}" for i, pm, pf in s.alternatives)
        tip = (f"{token_text(tokenizer, s.token)}: {labels['final']} {s.prob:.3f}, "
               f"{labels['model']} {s.model_prob:.3f}, {labels['rank']} {s.rank + 1}\n{alts}")
        text = html.escape(tokenizer.decode([s.token])).replace("\n", "⏎<br>")
        spans.append(f'<span title="{html.escape(tip)}" style="background:{_colour(s.prob)};'
                     f'border-radius:3px;padding:1px 0">{text}</span>')
    return ('<div style="font-family:monospace;font-size:1.0rem;line-height:1.9;'
            'white-space:pre-wrap;direction:auto">' + "".join(spans) + "</div>")
