"""The generated-text view shared by the decoding pages: each token coloured by the
probability it had when it was chosen; hovering shows the top alternatives at that step and,
for steps recorded by lib.decoding.generate.continuation (StepRecord), how every pipeline stage changed
them and how many tokens each filter kept. `steps_table` gives the same numbers as columns.
Numbers are written by `fmt(value, spec)`: pass the page's `t.num` so they follow its language."""
from __future__ import annotations

import html

from lib.model.tokens import token_text


def _colour(p: float) -> str:
    """Low probability -> warm red, high -> cool green (alpha keeps text readable)."""
    r, g = int(230 * (1 - p) + 40 * p), int(80 * (1 - p) + 180 * p)
    return f"rgba({r},{g},90,0.35)"


def _stage_label(labels: dict[str, str], name: str) -> str:
    return labels.get(f"stage_{name}", labels.get(name, name))


def _tooltip(tokenizer, s, labels: dict[str, str], fmt=format) -> str:
    head = (f"{token_text(tokenizer, s.token)}: {labels['final']} {fmt(s.prob, '.3f')}, "
            f"{labels['model']} {fmt(s.model_prob, '.3f')}, {labels['rank']} {fmt(s.rank + 1, ',')}")
    stages = [v for v in getattr(s, "stages", []) if v.name != "input"]
    if not stages:
        alts = "\n".join(f"{token_text(tokenizer, i)!s:>14}  {labels['model']} {fmt(pm, '.3f')} → "
                         f"{labels['final']} {fmt(pf, '.3f')}" for i, pm, pf in s.alternatives)
        return f"{head}\n{alts}"
    kept = " · ".join(f"{_stage_label(labels, v.name)} {fmt(v.kept, ',')}" for v in stages if v.kept_mass is not None)
    lines = [head] + ([f"{labels.get('kept', 'kept')}: {kept}"] if kept else [])
    for j, (i, pm, pf) in enumerate(s.alternatives):
        chain = " → ".join(f"{_stage_label(labels, v.name)} {fmt(v.alt_probs[j], '.3f')}" for v in stages)
        mark = "▶ " if i == s.token else "   "
        lines.append(f"{mark}{token_text(tokenizer, i)}: {labels['model']} {fmt(pm, '.3f')} → {chain}")
    return "\n".join(lines)


def tokens_html(tokenizer, prompt_text: str, steps, labels: dict[str, str], fmt=format) -> str:
    """steps: StepRecord (or PipelineStep) list. labels: {"model": ..., "final": ..., "rank": ...}
    and optionally "kept" and "stage_<name>" for each pipeline stage."""
    spans = [f'<span style="color:#888">{html.escape(prompt_text)}</span>']
    for s in steps:
        tip = _tooltip(tokenizer, s, labels, fmt)
        text = html.escape(tokenizer.decode([s.token])).replace("\n", "⏎<br>")
        spans.append(f'<span title="{html.escape(tip)}" style="background:{_colour(s.prob)};'
                     f'border-radius:3px;padding:1px 0;cursor:help">{text}</span>')
    return ('<div class="token-view" style="font-family:monospace;font-size:1.0rem;line-height:1.9;'
            'white-space:pre-wrap;direction:auto">' + "".join(spans) + "</div>")


def steps_table(tokenizer, steps, labels: dict[str, str], fmt=None) -> dict[str, list]:
    """One row per generated token: the token, its final and model probability, its model
    rank, and (for PipelineSteps) how many tokens each filter kept: numbers (probabilities
    rounded to 4 places), or with `fmt` the texts `fmt(value, spec)` writes."""
    if fmt is None:
        fmt = lambda v, spec: round(v, 4) if spec == ".4f" else v   # noqa: E731
    cols: dict[str, list] = {labels.get("step", "step"): [], labels.get("token", "token"): [],
                             labels["final"]: [], labels["model"]: [], labels["rank"]: []}
    keys = list(cols)
    for n, s in enumerate(steps, 1):
        for key, v in zip(keys, (n, token_text(tokenizer, s.token), fmt(s.prob, ".4f"),
                                 fmt(s.model_prob, ".4f"), fmt(s.rank + 1, ","))):
            cols[key].append(v)
        for v in getattr(s, "stages", []):
            if v.kept_mass is not None:
                name = f"{labels.get('kept', 'kept')}: {_stage_label(labels, v.name)}"
                cols.setdefault(name, [None] * (n - 1)).append(fmt(v.kept, ","))
        for col in cols.values():
            if len(col) < n:
                col.append(None)
    return cols
