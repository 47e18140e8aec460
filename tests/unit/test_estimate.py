"""lib/ui/estimate.py: what a page's state cost, from its results' own timings (issue 33: a time
estimate shown before an expensive control change runs)."""
from types import SimpleNamespace

from lib.ui import estimate


def _used(*pairs):
    return [SimpleNamespace(origin=o, prov=SimpleNamespace(seconds=s)) for o, s in pairs]


def test_a_computing_run_sets_the_change_estimate_and_a_served_one_does_not():
    estimate.clear()
    assert estimate.change_seconds("p") is None and estimate.state_seconds("p", {"a": "1"}) is None
    estimate.record("p", {"a": "1", "view": "present"}, _used(("computed", 3.0), ("disk", 1.5)))
    assert estimate.change_seconds("p") == 3.0                      # only what this run computed
    assert estimate.state_seconds("p", {"a": "1"}) == 4.5           # the state's results, view left out
    estimate.record("p", {"a": "2"}, _used(("shared", 9.0)))        # served from memory: no new change cost
    assert estimate.change_seconds("p") == 3.0 and estimate.state_seconds("p", {"a": "2"}) == 9.0
    estimate.record("p", {"a": "3"}, _used(("computed", 0.1)))      # too quick to be worth saying
    assert estimate.change_seconds("p") == 3.0
    estimate.record("p", {"a": "4"}, [])
    assert estimate.state_seconds("p", {"a": "4"}) is None
    estimate.clear()
