"""How long a page's state takes to compute, from the shared results' own timings, so a page can
say so before an expensive change runs ("last time a new setting took ~N s").

`record(slug, query, used)` is called when a page's script run ends (ConceptPage.finish) with
the results that run used (`memo.run_provenance()`); each result carries the seconds its
computation took (Provenance.seconds), also when it was served from memory or from the cache
folder. Two figures are kept for this server process, in memory:
- per page: the seconds of the last run that COMPUTED something (what a new setting cost);
- per (page, URL state): the seconds the state's results took to compute (what opening that
  state cold would cost: a lesson step shows it).
Nothing is estimated when nothing was recorded: the caller then says nothing.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

MIN_S = 0.5                    # below this a page is quick: no estimate worth showing
MAX_STATES = 1024
_lock = threading.Lock()
_change: dict[str, float] = {}            # slug -> seconds a run that computed took
_state: OrderedDict = OrderedDict()       # (slug, query) -> seconds its results took


def state_key(query: dict) -> tuple:
    """A URL state as a key: its parameters sorted, the view (presenter) and reveal (answers)
    left out: they change what is drawn, not the state's experiments."""
    return tuple(sorted((k, str(v)) for k, v in query.items() if k not in ("view", "reveal")))


def record(slug: str, query: dict, used: list) -> None:
    """Note what this run of page `slug` in URL state `query` cost (see the module docstring).
    `used`: memo.Used entries (.origin, .prov.seconds)."""
    if not used:
        return
    total = sum(u.prov.seconds for u in used)
    computed = sum(u.prov.seconds for u in used if u.origin == "computed")
    with _lock:
        if computed >= MIN_S:
            _change[slug] = computed
        k = (slug, state_key(query))
        _state[k] = total
        _state.move_to_end(k)
        while len(_state) > MAX_STATES:
            _state.popitem(last=False)


def change_seconds(slug: str) -> float | None:
    """Seconds the last run of `slug` that computed something took (None: none recorded)."""
    return _change.get(slug)


def state_seconds(slug: str, query: dict) -> float | None:
    """Seconds the results of `slug` in URL state `query` took to compute (None: never opened)."""
    return _state.get((slug, state_key(query)))


def clear() -> None:
    with _lock:
        _change.clear()
        _state.clear()
