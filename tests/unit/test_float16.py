"""float16 weights on the CPU: the residual stream overflows float16 (Gemma's outlier
channels), so the engine keeps it in float32; sampling then works as in float32."""
import pytest
import torch

from lib.core import engine_weights
from lib.core.engine import Engine
from lib.decoding.sampling import InvalidLogits, SamplingConfig, run_pipeline
from lib.model.from_transformers import engine_from_hf
from tests.conftest import tiny_gemma3


def _loud_tiny_gemma3():
    """A tiny Gemma 3 whose post-MLP norm scales by ~30,000: its residual stream passes
    float16's maximum (65,504) after a few layers, as the real model's outlier channels do."""
    hf = tiny_gemma3()
    with torch.no_grad():
        for layer in hf.model.layers:
            layer.post_feedforward_layernorm.weight.fill_(3e4)
    return hf


def test_float16_engine_keeps_the_residual_stream_finite():
    hf = _loud_tiny_gemma3()
    e32 = engine_from_hf(hf)
    w16 = engine_weights.to(engine_weights.from_named(e32.spec, dict(hf.named_parameters()).get), "cpu", torch.float16)
    e16 = Engine(e32.spec, w16)
    ids = torch.arange(1, 13)[None]
    resid = e32.forward(ids, e32.new_cache(), logits="none")                   # (1, T, D) float32
    x = e16.forward(ids, e16.new_cache(), logits="none")
    assert x.dtype == torch.float16 and torch.isfinite(x).all()
    out16 = e16.forward(ids, e16.new_cache(), logits="all").float()             # (1, T, V)
    out32 = e32.forward(ids, e32.new_cache(), logits="all")
    assert torch.isfinite(out16).all()
    torch.testing.assert_close(out16, out32, atol=0.05, rtol=0.02)
    from lib.core.hooks import Recorder
    rec = Recorder({"resid_out"})
    e32.forward(ids, e32.new_cache(), hooks=rec.hooks())
    assert max(float(t.abs().max()) for t in rec.store.values()) > 65_504   # it would overflow
    assert resid.abs().max() < 1e3                                          # (after the final norm)


def test_float16_logits_sample_like_float32():
    logits = torch.tensor([2.0, 1.0, 0.5, -1.0], dtype=torch.float16)
    res = run_pipeline(logits, SamplingConfig(0.7))
    ref = run_pipeline(logits.float(), SamplingConfig(0.7))
    assert res.probs.dtype == torch.float32 and torch.equal(res.probs, ref.probs)


def test_nan_logits_are_named_not_blamed_on_a_stage():
    with pytest.raises(InvalidLogits, match="NaN"):
        run_pipeline(torch.tensor([float("nan"), 1.0]), SamplingConfig(0.7))
