"""Loading other models: what works, and what fails with a clear message."""
import json
import shutil

import pytest
import torch

from lib.model import model_loader
from lib.model.model_loader import ModelLoadError
from tests.conftest import tiny_llama


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ModelLoadError, match="no folder"):
        model_loader.load(str(tmp_path / "nope"), "cpu")


def test_unsupported_architecture_is_refused_before_loading_weights(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertModel"]}))
    with pytest.raises(ModelLoadError, match="bert"):
        model_loader.load(str(tmp_path), "cpu")


def test_malformed_config_is_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text("{ not json")
    with pytest.raises(ModelLoadError):
        model_loader.load(str(tmp_path), "cpu")


def test_unavailable_device_is_a_clear_error():
    with pytest.raises(ModelLoadError, match="not available"):
        model_loader.load("bundled", "tpu")


@pytest.mark.slow  # writes a model folder and loads it twice (ours, transformers)
def test_a_local_llama_folder_loads_and_matches_transformers(tmp_path, real_folder):
    hf = tiny_llama("llama")
    hf.save_pretrained(tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(real_folder / name, tmp_path / name)
    m = model_loader.load(str(tmp_path), "cpu")
    assert m.spec.family == "llama" and m.spec.n_kv_heads == 2
    ids = torch.tensor([[1, 5, 9, 33]])
    with torch.no_grad():
        ref = hf(ids).logits[0, -1]
    torch.testing.assert_close(m.engine.forward(ids, m.engine.new_cache())[0, -1], ref, atol=1e-5, rtol=0)


def test_unreachable_hub_id_fails_fast_with_a_clear_message(monkeypatch):
    import time

    monkeypatch.setattr(model_loader, "_hub_reachable", lambda *a, **k: False)
    t0 = time.perf_counter()
    with pytest.raises(ModelLoadError, match="cannot be reached"):
        model_loader.load("some-org/some-model-that-is-not-cached", "cpu")
    assert time.perf_counter() - t0 < 10


@pytest.mark.parametrize("source", ["/" + "a" * 299, "a" * 300, "./" + "b/" * 150, "x" * 600, "/tmp/\x00nul"])
def test_overlong_or_odd_paths_are_clear_errors_not_oserrors(source, monkeypatch):
    """A 300-character "Another model" path raised an uncaught `OSError: File name too long`."""
    monkeypatch.setattr(model_loader, "_hub_reachable", lambda *a, **k: False)
    with pytest.raises(ModelLoadError):
        model_loader.load(source, "cpu")
