"""Mutation tests for the model-memory page: realistic bugs planted in the memory calculator
(lib.concepts.model_memory.memory_accounting) must turn at least one of the page's live checks
red; without them every check is green. The probes run once (real model files, small fresh
processes); each mutation only changes the calculator, as a bug in it would."""
import pytest

from lib.concepts.model_memory import checks as mc
from lib.concepts.model_memory import memory_accounting as ma
from lib.concepts.model_memory import probes
from lib.model import bundled_model
from lib.model.long_text import long_text

pytestmark = pytest.mark.real_model


def key(text_key, /, **_):
    return text_key


@pytest.fixture(scope="module")
def measured(real_model):
    spec = real_model.spec
    ids = tuple(real_model.tokenizer(long_text()[:4000])["input_ids"][:128])
    return mc.Measured(ma.gguf_breakdown(str(bundled_model.gguf_path())), probes.measure_kv(spec, (256, 1024)),
                       probes.measure_weights(spec), probes.measure_prefill(spec, ids, 1))


def failed(real_model, measured):
    return {r.name for r in mc.page_checks(real_model.spec, measured, key) if not r.passed}


def test_all_green_without_a_bug(real_model, measured):
    results = mc.page_checks(real_model.spec, measured, key)
    assert [r.name for r in results] == ["check_bpw", "check_ollama", "check_weights", "check_params", "check_kv",
                                         "check_prefill"]
    assert failed(real_model, measured) == set(), [r for r in results if not r.passed]


def test_kv_cache_counts_keys_but_not_values(real_model, measured, monkeypatch):
    real = ma.kv_bytes_formula
    monkeypatch.setattr(ma, "kv_bytes_formula", lambda *a, **k: real(*a, **k) / 2)
    assert "check_kv" in failed(real_model, measured)


def test_sliding_window_layers_sized_as_full(real_model, measured, monkeypatch):
    monkeypatch.setattr(ma, "ring_capacities", lambda windows, tokens, chunk: [tokens] * len(windows))
    assert "check_kv" in failed(real_model, measured)


def test_tied_embedding_counted_twice(real_model, measured, monkeypatch):
    real = ma.parameter_count
    spec = real_model.spec
    monkeypatch.setattr(ma, "parameter_count", lambda s: real(s) + (s.vocab * s.hidden if s.tied_embeddings else 0))
    assert {"check_params", "check_weights", "check_ollama"} <= failed(real_model, measured)
    assert spec.tied_embeddings


def test_float32_counted_as_two_bytes(real_model, measured, monkeypatch):
    monkeypatch.setitem(ma.BITS_PER_WEIGHT, "float32", 16.0)
    assert "check_weights" in failed(real_model, measured)


def test_q8_0_without_its_block_scales(real_model, measured, monkeypatch):
    """Q8_0 stores a float16 scale per 32 weights: 8.5 bits, not 8."""
    monkeypatch.setitem(ma.BITS_PER_WEIGHT, "Q8_0", 8.0)
    assert {"check_bpw", "check_ollama"} <= failed(real_model, measured)


def test_prefill_counts_one_mlp_buffer_instead_of_four(real_model, measured, monkeypatch):
    real = ma.prefill_activation_bytes

    def one_buffer(spec, batch, tokens, bytes_per_element=4, logits=True):
        return real(spec, batch, tokens, bytes_per_element, logits) - 3 * batch * tokens * spec.intermediate * bytes_per_element
    monkeypatch.setattr(ma, "prefill_activation_bytes", one_buffer)
    assert "check_prefill" in failed(real_model, measured)


# ---- the calculator against a real engine cache (issue 32): also when the probes are refused --
@pytest.fixture(scope="module")
def engine_kv(real_model):
    from lib.reference.memory_reference import engine_cache_bytes

    return engine_cache_bytes(real_model.engine, tuple(real_model.tokenizer(long_text()[:4000])["input_ids"][:128]))


def refused_failed(real_model, measured, engine_kv):
    alone = mc.Measured(measured.gguf, None, None, None)                  # every probe refused
    return {r.name for r in mc.page_checks(real_model.spec, alone, key, engine_kv) if not r.passed}


def test_engine_cache_check_green_without_a_bug(real_model, measured, engine_kv):
    assert "check_kv_engine" in {r.name for r in mc.page_checks(real_model.spec, measured, key, engine_kv)}
    assert refused_failed(real_model, measured, engine_kv) == set()


def test_kv_values_forgotten_seen_by_the_engine_cache_with_probes_refused(real_model, measured, engine_kv,
                                                                          monkeypatch):
    real = ma.kv_bytes_formula
    monkeypatch.setattr(ma, "kv_bytes_formula", lambda *a, **k: real(*a, **k) / 2)
    assert "check_kv_engine" in refused_failed(real_model, measured, engine_kv)


def test_kv_positions_forgotten(real_model, measured, engine_kv, monkeypatch):
    real = ma.kv_cache_bytes
    monkeypatch.setattr(ma, "kv_cache_bytes", lambda *a, **k: real(*a, **{**k, "positions": False}))
    assert "check_kv_engine" in refused_failed(real_model, measured, engine_kv)
