"""bench/floors.py: the lower bounds on issue 29's long runs are the arithmetic its docstring states,
and the weights they count are the engine's own matrices."""
import pytest

from bench import floors
from lib.concepts.model_memory.memory_accounting import parameter_count
from lib.model.from_transformers import engine_from_hf
from tests.conftest import tiny_gemma3


def test_matrix_weights_are_the_models_parameters_less_embedding_and_norms():
    hf = tiny_gemma3(window=8)
    eng = engine_from_hf(hf)
    body, head = floors.matrix_weights(eng)
    s = eng.spec
    norms = s.n_layers * (4 * s.hidden + 2 * s.head_dim) + s.hidden       # Gemma 3: sandwich norms, q/k norms, final
    assert body + head + norms == parameter_count(s) == sum(p.numel() for p in hf.parameters())
    assert head == s.vocab * s.hidden


def test_floors_follow_from_the_rates():
    out = floors.floors(body=100, head=50, gflops=1e-6, step_ms=10.0)     # 1,000 FLOP/s
    assert out["floor_attention_sinks_new_window_s"] == pytest.approx(2 * 4096 * 300 / 1000)
    assert out["floor_speculative_speed_n48_s"] == pytest.approx((1 + floors.SPEC_REPEATS) * 48 * 0.01)
    steps = (2 + 1 + 1) + (2 + 16 + 1)
    assert out["floor_chunked_prefill_l512_s"] == pytest.approx(3 * (steps * 0.01 + 2 * 512 * 200 / 1000))


def test_the_decoding_step_runs_on_any_model():
    eng = engine_from_hf(tiny_gemma3(window=8))
    assert floors.decode_step_ms(eng, prompt_tokens=8, steps=4) > 0
