"""`make run`'s server (lib.serving.serve) starts its work before anyone visits: with no session
opened by the test, the model is loaded and pages' default results appear in the results
folder (a plain `streamlit run app.py` runs no script until a visitor comes)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench.classroom import free_port, start_server, stop_server
from lib.serving.serve import option

def test_option_reads_both_spellings():
    assert option(["--server.port", "8600", "--x"], "--server.port", "8501") == "8600"
    assert option(["--server.port=8601"], "--server.port", "8501") == "8601"
    assert option([], "--server.port", "8501") == "8501"


@pytest.mark.load
@pytest.mark.real_model
def test_the_served_app_computes_defaults_before_its_first_visitor(tmp_path):
    results = tmp_path / "results"
    proc, _ = start_server(free_port(), {"LLM_LAB_RESULTS": str(results)}, serve=True)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not any(Path(results).rglob("*.pkl")):
            assert proc.poll() is None, "the server exited"
            time.sleep(1.0)
        assert any(Path(results).rglob("*.pkl")), "no default result was computed without a visitor"
    finally:
        stop_server(proc)
    assert proc.poll() is not None
