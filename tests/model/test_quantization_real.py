"""The quantization and memory pages' claims on the real Gemma 3 270M."""
import pytest
import torch

from lib.core.quantization import activation_capture as ac
from lib.concepts.kv_quantization import kv_quant as kq
from lib.core.quantization import quantize as qz
from lib.core.quantization.quantize import QuantSpec

pytestmark = pytest.mark.real_model
TOL = 0.10


@pytest.fixture(scope="module")
def text_ids(real_model, gpl_text):
    return tuple(real_model.tokenizer(gpl_text)["input_ids"][:64])


@pytest.fixture(scope="module")
def capture(real_model, text_ids):
    return ac.capture(real_model.engine, text_ids)


def test_outlier_channels_exist_and_scale_is_max_over_qmax(capture):
    acts = capture.acts["resid_out"][11]                              # (63, 640)
    cmax = ac.channel_max(acts)
    assert float(cmax.max()) > 20 * float(cmax.median())            # a massive outlier channel
    q = qz.quantize(acts, QuantSpec(8, "tensor"))
    assert float(q.scale.flatten()[0]) == float(acts.abs().max() / 127)


@pytest.mark.parametrize("point,layer", [("mlp_act", 5), ("resid_out", 11), ("attn_in", 5)])
@pytest.mark.parametrize("bits", [8, 4])
def test_finer_scales_beat_per_tensor_on_real_activations(capture, point, layer, bits):
    acts = capture.acts[point][layer]
    row = qz.error_grid(acts, (bits,), qz.GRANULARITIES, group_size=64)[0]
    tensor, token, channel, group = (e.sqnr_db for e in row)
    assert group >= tensor and channel >= tensor and token >= tensor
    assert channel > tensor + 6                                       # at least 1 bit's worth


def test_quantized_activation_changes_predictions_more_per_tensor(real_model, text_ids, capture):
    acts = capture.acts["mlp_act"][5]
    rows = {k: ac.injection_row(real_model.engine, text_ids, capture.hidden, acts, "mlp_act", 5, 4, 64, 0.0, k)
            for k in ("tensor", "channel")}
    assert rows["channel"].effect.kl_mean < rows["tensor"].effect.kl_mean
    assert rows["tensor"].effect.kl_mean > 0


def test_kv_cache_bytes_and_quantization_effects(real_model, text_ids):
    eng, s = real_model.engine, real_model.spec
    ref = kq.reference(eng, text_ids, 16)
    assert ref.cache_nbytes == kq.kv_bytes_formula(s.n_layers, s.n_kv_heads, s.head_dim, len(text_ids), 1, 4)
    run = lambda b, g="channel": kq.run_policy(eng, text_ids, 16, kq.KVQuantPolicy(QuantSpec(b, g), QuantSpec(b, g)), _ref=ref)  # noqa: E731
    r16, r8, r2 = run(16, "token"), run(8), run(2)
    assert r16.effect.kl_mean < 1e-5 and r16.attn_max < 5e-3            # 16-bit round trip ~ lossless
    assert r8.effect.kl_mean < r2.effect.kl_mean and r8.attn_tv < r2.attn_tv   # fewer bits, more error
    assert r2.bytes_stored < r8.bytes_stored < r16.bytes_stored < ref.cache_nbytes
    for r, b, g in ((r8, 8, "channel"), (r2, 2, "channel"), (r16, 16, "token")):   # measured storage = formula
        pol = kq.KVQuantPolicy(QuantSpec(b, g), QuantSpec(b, g))
        assert r.bytes_stored == kq.predicted_bytes(s, (ref.n_prefix, ref.n_eval), pol)
        assert r.half_step <= 1.01                                     # read back within half a step
