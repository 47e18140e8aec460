"""Mutation tests for the activation-outliers page: realistic bugs planted in the quantizer and
the clipping experiment (lib.core.quantization.quantize, which the page's "The code"
shows) must turn at least one of the page's live checks red; without them every check is
green. Activations are captured from a tiny random Gemma 3 through the same capture code, with
one outlier channel planted (the real model's are shown on the page)."""
import pytest
import torch

from lib.concepts.activation_outliers import checks
from lib.core.quantization import activation_capture as ac
from lib.core.quantization import quantize as qz
from lib.core.cache import quantized as cq
from lib.model.from_transformers import engine_from_hf
from tests.conftest import tiny_gemma3

BITS, GROUP = 8, 8


def key(_name, **_):
    return _name


@pytest.fixture(scope="module")
def acts():
    torch.set_num_threads(1)
    eng = engine_from_hf(tiny_gemma3(window=8))
    ids = tuple(torch.randint(0, 97, (24,), generator=torch.Generator().manual_seed(0)).tolist())
    x = ac.capture(eng, ids).acts["resid_out"][2].clone()                  # (T - 1, C)
    x[:, 3] *= 60                                                          # an outlier channel
    return x


def results(acts):
    sqnr = {g: qz.error_stats(acts, qz.fake_quantize(acts, qz.QuantSpec(BITS, g, True, GROUP))).sqnr_db
            for g in qz.GRANULARITIES}
    clip_at = 6 * float(ac.channel_max(acts).median())
    effect = ac.Effect(0.1, 0.2, 10.0, 11.0, 0.9)                          # only displayed by the checks
    res = checks.page_checks(acts, BITS, GROUP, sqnr, clip_at, qz.clip(acts, clip_at), effect, 10.0, key)
    return {r.name for r in res if not r.passed}


def test_all_green_without_a_bug(acts):
    assert results(acts) == set()


def test_scale_divides_by_2_to_the_bits(acts, monkeypatch):
    monkeypatch.setattr(cq.QuantSpec, "qmax", property(lambda self: 2 ** self.bits if self.symmetric else 2 ** self.bits - 1))
    assert "check_scale" in results(acts)


def test_token_and_channel_axes_swapped(acts, monkeypatch):
    real = cq.grouped

    def swapped(x, spec):
        if spec.granularity == "token":
            return x, (-2,)
        if spec.granularity == "channel":
            return x, (-1,)
        return real(x, spec)
    monkeypatch.setattr(cq, "grouped", swapped)
    assert {"check_scale", "check_finer"} & results(acts)


def test_floor_instead_of_round(acts, monkeypatch):
    real = cq.quantize

    def floored(x, spec, scale_dtype=None):
        q = real(x, spec, scale_dtype)
        xg, _ = cq.grouped(x.float(), spec)
        codes = torch.clamp(torch.floor(xg / q.scale), -spec.qmax, spec.qmax)
        return cq.Quantized(codes.to(torch.int32).reshape(x.shape), q.scale, q.zero,
                            (codes * q.scale).reshape(x.shape), q.n_groups)
    monkeypatch.setattr(qz, "quantize", floored)
    assert {"check_scale", "check_bound"} & results(acts)


def test_clip_only_the_positive_side(acts, monkeypatch):
    monkeypatch.setattr(qz, "clip", lambda x, thr: torch.clamp(x, max=thr))
    assert "check_clip" in results(acts)


def test_scale_without_the_division_by_qmax(acts, monkeypatch):
    real = cq.quantize

    def no_qmax(x, spec, scale_dtype=None):
        return real(x, cq.QuantSpec(2, spec.granularity, spec.symmetric, spec.group_size), scale_dtype) \
            if spec.bits == BITS else real(x, spec, scale_dtype)              # qmax = 1: scale = max|x|
    monkeypatch.setattr(qz, "quantize", no_qmax)
    assert {"check_scale", "check_bound"} <= results(acts)


def test_per_tensor_scale_where_per_channel_was_asked(acts, monkeypatch):
    real = cq.quantize
    monkeypatch.setattr(qz, "quantize", lambda x, spec, scale_dtype=None: real(
        x, cq.QuantSpec(spec.bits, "tensor", spec.symmetric, spec.group_size) if spec.granularity == "channel" else spec,
        scale_dtype))
    assert "check_scale" in results(acts)
