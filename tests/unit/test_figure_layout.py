"""Concept figures laid out for a phone (390 px) and a projector (issue 33): labels that do not
print into one another, annotations inside the chart. Cheap checks on the figure objects, by
estimated text width (no browser)."""
from __future__ import annotations

import numpy as np

from lib.ui import responsive

TITLE_CHAR_PX = 8.2          # a 16 px panel title's average character, px


def _panel_centres_px(fig, plot_px):
    xs = sorted(fig.layout[k].domain for k in fig.layout if k.startswith("xaxis"))
    return [(d[0] + d[1]) / 2 * plot_px for d in xs]


def test_gqa_panel_titles_fit_their_panels_and_tick_labels_stay_off_the_maps():
    from lib.concepts.gqa.figures import head_maps_figure

    tokens = ["<bos>", "Alice", "␣gave", "␣Bob"]
    for title in ("query head {h} → K/V head 0", "head query {h} → head K/V 0"):      # en, id
        fig = head_maps_figure(np.full((4, 4, 4), 0.25), tokens, [title.format(h=h) for h in range(4)],
                               {"hover": "", "y": "query position", "x": "key position", "title": "t"})
        assert responsive.needs_width(fig)
        shown, _ = responsive.shown_figure(fig, wide=True)
        plot_px = responsive.WIDE_PX - 180          # less the token labels, the y axis title, the colour bar (as drawn)
        centres = _panel_centres_px(shown, plot_px)
        step = min(b - a for a, b in zip(centres, centres[1:]))
        for a in shown.layout.annotations:
            widest = max(len(line) for line in a.text.split("<br>")) * TITLE_CHAR_PX
            assert widest <= step - 8, (a.text, widest, step)
        shown_ticks = [shown.layout[f"yaxis{i}"].showticklabels for i in ("", 2, 3, 4)]
        assert shown_ticks == [None, False, False, False]                   # only the first map's left
