"""A visitor's other model or dtype is loaded only within the server's memory budget (issue 12:
bfloat16 then float16 held extra full copies for everyone, 4.4 GB)."""
import pytest

from lib.model.model_loader import ModelLoadError
from lib.ui import runtime


@pytest.fixture()
def no_models(monkeypatch):
    monkeypatch.setattr(runtime, "_models", {})
    loaded = []
    monkeypatch.setattr(runtime.model_loader, "load", lambda s, d, dt, progress=None: loaded.append((s, d, dt)) or object())
    return loaded


def test_a_dtype_over_the_budget_is_refused_with_a_message(no_models, monkeypatch):
    monkeypatch.setattr(runtime, "rss_mb", lambda: 1900.0)
    monkeypatch.setattr(runtime, "MEMORY_BUDGET_MB", 2200.0)
    with pytest.raises(ModelLoadError, match="budget"):
        runtime._load("bundled", "cpu", "bfloat16")
    assert no_models == []


def test_within_the_budget_it_loads_and_only_one_visitor_model_is_kept(no_models, monkeypatch):
    monkeypatch.setattr(runtime, "rss_mb", lambda: 500.0)
    runtime._load(*runtime.server_choice())
    runtime._load("bundled", "cpu", "bfloat16")
    runtime._load("bundled", "cpu", "float16")
    assert set(runtime._models) == {runtime.server_choice(), ("bundled", "cpu", "float16")}


def test_visitor_models_can_be_switched_off(no_models, monkeypatch):
    monkeypatch.setattr(runtime, "VISITOR_MODELS", False)
    with pytest.raises(ModelLoadError, match="LLM_LAB_MODEL"):
        runtime._load("bundled", "cpu", "bfloat16")
    runtime._load(*runtime.server_choice())                  # the server's own model always loads


def test_estimates_follow_the_stored_file_and_the_dtype():
    """float32 maps the engine file as stored (its vocabulary Q8_0); 16-bit dtypes hold every
    parameter in 2 bytes."""
    from lib.core import engine_weights
    from lib.model import bundled_model

    f = bundled_model.bundled_folder() / engine_weights.FILE
    if not f.exists():
        pytest.skip("the bundled model is not prepared")
    assert runtime.estimate_mb("bundled", "float32") == pytest.approx(f.stat().st_size / 2**20)
    b16 = runtime.estimate_mb("bundled", "bfloat16")
    assert b16 == pytest.approx(runtime.estimate_mb("bundled", "float16"))
    assert b16 == pytest.approx(engine_weights.parameter_count(f) * 2 / 2**20)
    assert 260e6 < engine_weights.parameter_count(f) < 280e6            # Gemma 3 270M
