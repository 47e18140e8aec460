"""Quantize / dequantize on hand-built tensors (lib.core.quantization.quantize)."""
import math

import pytest
import torch

from lib.core.quantization import quantize as qz
from lib.core.quantization.quantize import QuantSpec


def outlier_acts(seed=0, T=32, C=64, channel=5, big=100.0):
    """Small Gaussian activations with one outlier channel (like the real model's)."""
    x = torch.randn(T, C, generator=torch.Generator().manual_seed(seed)) * 0.5
    x[:, channel] *= big
    return x


@pytest.mark.parametrize("bits", [8, 4, 2])
def test_per_tensor_scale_is_max_abs_over_qmax(bits):
    x = outlier_acts()
    q = qz.quantize(x, QuantSpec(bits, "tensor"))
    assert q.n_groups == 1
    assert float(q.scale.flatten()[0]) == float(x.abs().max() / (2 ** (bits - 1) - 1))  # same float32 op


def test_per_channel_per_token_and_group_scales():
    x = outlier_acts()
    qc = qz.quantize(x, QuantSpec(8, "channel"))
    torch.testing.assert_close(qc.scale.flatten(), x.abs().amax(0) / 127, rtol=0, atol=0)
    qt = qz.quantize(x, QuantSpec(8, "token"))
    torch.testing.assert_close(qt.scale.flatten(), x.abs().amax(1) / 127, rtol=0, atol=0)
    qg = qz.quantize(x, QuantSpec(8, "group", group_size=16))
    assert qg.n_groups == 32 * 4
    torch.testing.assert_close(qg.scale.reshape(32, 4), x.reshape(32, 4, 16).abs().amax(-1) / 127, rtol=0, atol=0)


@pytest.mark.parametrize("gran", qz.GRANULARITIES)
@pytest.mark.parametrize("bits", [8, 4, 2])
def test_codes_in_range_and_error_at_most_half_a_step(gran, bits):
    x = outlier_acts(1)
    q = qz.quantize(x, QuantSpec(bits, gran, group_size=16))
    qmax = 2 ** (bits - 1) - 1
    assert int(q.codes.abs().max()) <= qmax
    assert bool(((x - q.dequant).abs() <= q.scale.expand_as(q.dequant.reshape(q.scale.shape[:-1] + (-1,)))
                 .reshape(x.shape) / 2 + 1e-6).all()) if gran == "group" else \
        bool(((x - q.dequant).abs() <= q.scale / 2 + 1e-6).all())


def test_asymmetric_codes_and_endpoints():
    x = torch.rand(8, 16, generator=torch.Generator().manual_seed(3)) * 5 + 2   # all positive
    q = qz.quantize(x, QuantSpec(4, "tensor", symmetric=False))
    assert int(q.codes.min()) >= 0 and int(q.codes.max()) <= 15
    step = float(q.scale.flatten()[0])
    assert step == pytest.approx((float(x.max()) - float(x.min())) / 15)
    assert float((x - q.dequant).abs().max()) <= step / 2 + 1e-5
    # asymmetric uses all 16 codes on one-signed data, symmetric only half of them
    sym = qz.quantize(x, QuantSpec(4, "tensor"))
    assert qz.error_stats(x, q.dequant).mse < qz.error_stats(x, sym.dequant).mse


def test_16_bit_round_trip_is_practically_lossless():
    x = outlier_acts(2)
    st = qz.error_stats(x, qz.fake_quantize(x, QuantSpec(16, "tensor")))
    assert st.sqnr_db > 60 and st.sqnr_db > qz.error_stats(x, qz.fake_quantize(x, QuantSpec(8, "tensor"))).sqnr_db + 40
    assert st.max_error <= float(x.abs().max()) / 32767 / 2 + 1e-6


def test_finer_scales_beat_per_tensor_with_an_outlier_channel():
    x = outlier_acts(4)
    grid = qz.error_grid(x, (8, 4), qz.GRANULARITIES, group_size=16)
    for row in grid:
        t, k, c, g = (e.sqnr_db for e in row)
        assert c > t and g > t and k >= t - 1e-9


def test_outlier_sets_the_step_of_every_other_channel_only_with_a_shared_scale():
    x = outlier_acts(6)
    others = [c for c in range(64) if c != 5]
    for bits in (8, 4):
        err_t = (x - qz.fake_quantize(x, QuantSpec(bits, "tensor")))[:, others].pow(2).mean()
        err_c = (x - qz.fake_quantize(x, QuantSpec(bits, "channel")))[:, others].pow(2).mean()
        assert err_c < err_t / 100


def test_error_grows_as_bits_shrink():
    x = outlier_acts(5)
    sq = [qz.error_stats(x, qz.fake_quantize(x, QuantSpec(b, "channel"))).sqnr_db for b in (16, 8, 4, 2)]
    assert sq == sorted(sq, reverse=True)


def test_error_stats_exact_and_known_values():
    x = torch.tensor([[1.0, -2.0], [3.0, 4.0]])
    assert qz.error_stats(x, x).sqnr_db == math.inf
    st = qz.error_stats(x, x + torch.tensor([[0.0, 0.0], [0.0, 1.0]]))
    assert st.mse == pytest.approx(0.25) and st.max_error == pytest.approx(1.0)
    assert st.sqnr_db == pytest.approx(10 * math.log10(30 / 1))


def test_all_zero_group_and_input_untouched():
    x = torch.zeros(4, 8)
    x[0, 0] = 1.0
    before = x.clone()
    q = qz.quantize(x, QuantSpec(8, "token"))
    assert torch.equal(x, before)                        # no in-place change
    assert torch.equal(q.dequant[1:], torch.zeros(3, 8))  # all-zero rows stay zero (no 0/0)


def test_storage_bytes():
    assert qz.storage_bytes((10, 64), QuantSpec(8, "tensor")) == 640 + 2
    assert qz.storage_bytes((10, 64), QuantSpec(4, "token")) == 320 + 10 * 2
    assert qz.storage_bytes((10, 64), QuantSpec(2, "channel")) == 160 + 64 * 2
    assert qz.storage_bytes((3, 10, 64), QuantSpec(4, "group", group_size=32)) == 3 * (320 + 20 * 2)
    assert qz.storage_bytes((10, 64), QuantSpec(8, "tensor", symmetric=False)) == 640 + 4


def test_bad_specs_are_rejected_with_a_message():
    with pytest.raises(ValueError, match="bits"):
        QuantSpec(1)
    with pytest.raises(ValueError, match="granularity"):
        QuantSpec(8, "row")
    with pytest.raises(ValueError, match="divide"):
        qz.quantize(torch.ones(2, 10), QuantSpec(8, "group", group_size=3))


def test_clip():
    x = torch.tensor([-5.0, -1.0, 0.5, 7.0])
    assert torch.equal(qz.clip(x, 2.0), torch.tensor([-2.0, -1.0, 0.5, 2.0]))
