"""The memory probes' guard: a probe that would not fit the memory budget is refused before any
process starts, and the budget follows the environment."""
import pytest

from lib.concepts.model_memory import probes


def test_a_probe_over_the_budget_is_refused_without_starting(monkeypatch):
    monkeypatch.setenv(probes.BUDGET_ENV, "1")                      # 1 MB: nothing fits
    started = []
    monkeypatch.setattr(probes.subprocess, "Popen", lambda *a, **k: started.append(a) or (_ for _ in ()).throw(AssertionError))
    with pytest.raises(probes.ProbeRefused) as e:
        probes.measure_tokenizer()
    assert started == [] and e.value.need == probes.TOKENIZER_PROBE_BYTES and e.value.budget == 1e6
    assert e.value.used > 0


def test_budget_from_the_environment(monkeypatch):
    monkeypatch.setenv(probes.BUDGET_ENV, "2700")
    assert probes.memory_budget() == 2.7e9
    monkeypatch.delenv(probes.BUDGET_ENV)
    assert probes.memory_budget() > 0


def test_tree_rss_counts_children():
    import subprocess
    import sys

    alone = probes.tree_rss()
    child = subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(50_000_000); b[::4096] = b'x' * len(b[::4096]); time.sleep(30)"])
    try:
        import time
        for _ in range(100):
            if probes.tree_rss() > alone + 40e6:
                break
            time.sleep(0.1)
        assert probes.tree_rss() > alone + 40e6
    finally:
        child.kill()
        child.wait()
