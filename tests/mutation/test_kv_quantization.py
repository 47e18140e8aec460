"""Mutation tests for the kv-quantization page: realistic bugs planted in the quantized cache
(lib.core.cache.quantized: packing, scales, what gets quantized) must turn at least one of the
page's live checks red; without them every check is green. A tiny random Gemma 3 runs the
same engine and cache code as the page (the real model's 16 policies take minutes on a busy
2-core machine)."""
import pytest
import torch

from lib.concepts.kv_quantization import checks, kv_quant as kq
from lib.core.cache import quantized as cq
from lib.core.cache.quantized import KVQuantPolicy, QuantSpec
from lib.model.from_transformers import engine_from_hf
from lib.reference import quant_reference as qref
from tests.conftest import tiny_gemma3

pytestmark = pytest.mark.slow  # every mutation reruns the page's 12-policy grid (a tiny model, one thread)

GRANS = ("tensor", "token", "channel", "group")
NAMES = {g: g for g in GRANS}
GROUP, N_EVAL = 8, 8


def key(_name, **_):
    return _name


key.num = lambda v, spec="": format(v, spec)


@pytest.fixture(scope="module")
def eng():
    torch.set_num_threads(1)
    return engine_from_hf(tiny_gemma3(window=8))


@pytest.fixture(scope="module")
def ids():
    return tuple(torch.randint(0, 97, (40,), generator=torch.Generator().manual_seed(0)).tolist())


def results(eng, ids):
    ref = kq.reference(eng, ids, N_EVAL)
    run = lambda pol: kq.run_policy(eng, ids, N_EVAL, pol, _ref=ref)  # noqa: E731
    q = lambda b, g: QuantSpec(b, g, True, GROUP)  # noqa: E731
    grid = {(b, g): (KVQuantPolicy(q(b, g), q(b, g)), None) for b in (8, 4, 2) for g in GRANS}
    grid = {k: (p, run(p)) for k, (p, _) in grid.items()}
    r16 = run(KVQuantPolicy(q(16, "token"), q(16, "token")))
    r_k = run(KVQuantPolicy(q(2, "token"), None))
    r_v = run(KVQuantPolicy(None, q(2, "token")))
    res = checks.page_checks(eng.spec, (ref.n_prefix, ref.n_eval), grid, r16, r_k, r_v, NAMES, key)
    return {r.name for r in res if not r.passed}


def test_all_green_without_a_bug(eng, ids):
    assert results(eng, ids) == set()


def test_int4_stored_one_code_per_byte(eng, ids, monkeypatch):
    real_pack, real_unpack = cq.pack, cq.unpack
    monkeypatch.setattr(cq, "pack", lambda c, b, s=True: real_pack(c, 8, s) if b == 4 else real_pack(c, b, s))
    monkeypatch.setattr(cq, "unpack", lambda d, b, s=True: real_unpack(d, 8, s) if b == 4 else real_unpack(d, b, s))
    assert "check_bytes" in results(eng, ids)


def test_nibbles_unpacked_in_the_wrong_order(eng, ids, monkeypatch):
    real_unpack = cq.unpack

    def swapped(data, bits, symmetric=True):
        codes = real_unpack(data, bits, symmetric)
        if bits in (16, 8):
            return codes
        per = 8 // bits
        return codes.reshape(*codes.shape[:-1], -1, per).flip(-1).reshape(codes.shape)
    monkeypatch.setattr(cq, "unpack", swapped)
    assert {"check_step", "check_mono"} & results(eng, ids)


def test_scale_uses_2_to_the_bits_instead_of_qmax(eng, ids, monkeypatch):
    monkeypatch.setattr(QuantSpec, "qmax", property(lambda self: 2 ** self.bits - 1 if self.symmetric else 2 ** self.bits - 1))
    assert {"check_step", "check_mono", "check_16"} & results(eng, ids)


def test_values_policy_applied_to_keys(eng, ids, monkeypatch):
    real_init = cq.QuantizedKVCache.__init__

    def swapped(self, *a, policy, **k):
        real_init(self, *a, policy=KVQuantPolicy(policy.value, policy.value, policy.residual), **k)
    monkeypatch.setattr(cq.QuantizedKVCache, "__init__", swapped)
    assert {"check_kv", "check_bytes"} & results(eng, ids)


# ---- the quantizer itself, against PyTorch's fake quantization on float64 scales (issue 32) ----
# (only the two quantizer checks: no forward runs, the reference prefix cache is computed once)
@pytest.fixture(scope="module")
def prefix(eng, ids):
    return kq.reference(eng, ids, N_EVAL)


def quant_results(eng, ids, prefix):
    q = lambda b, g: QuantSpec(b, g, True, GROUP)  # noqa: E731
    pols = tuple(KVQuantPolicy(q(b, g), q(b, g)) for b in (8, 4, 2) for g in GRANS)
    reports = {p.label(): qref.cache_report(cq.QuantizedKVCache.from_cache(prefix.prefix, p), prefix.prefix) for p in pols}
    res = checks.quantizer_checks(reports, key)
    return {r.name for r in res if not r.passed}


def test_quantizer_checks_green_without_a_bug(eng, ids, prefix):
    assert quant_results(eng, ids, prefix) == set()


def _quantize_with(monkeypatch, scale_of=None, rounding=None, granularity_of=None):
    """Replace lib.core.cache.quantized.quantize (symmetric) by a copy with one step changed."""
    def bad(x, spec, scale_dtype=None):
        shape = x.shape
        xf = x.float().reshape(1, -1) if x.dim() == 1 else x.float()
        g = granularity_of(spec) if granularity_of else spec
        xg, dims = cq.grouped(xf, g)
        amax = xg.abs().amax(dim=dims, keepdim=True)
        scale = scale_of(amax, spec) if scale_of else amax / spec.qmax
        if scale_dtype is not None:
            scale = cq._round_up(scale, scale_dtype)
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
        codes = torch.clamp((rounding or torch.round)(xg / scale), -spec.qmax, spec.qmax)
        deq = codes * scale
        return cq.Quantized(codes.to(torch.int32).reshape(shape), scale, torch.zeros_like(scale),
                            deq.reshape(shape), scale.numel())
    monkeypatch.setattr(cq, "quantize", bad)


def test_scale_without_the_division_by_qmax(eng, ids, prefix, monkeypatch):
    _quantize_with(monkeypatch, scale_of=lambda amax, spec: amax)
    assert {"check_torchq", "check_step"} <= quant_results(eng, ids, prefix)


def test_codes_truncated_toward_zero_instead_of_rounded(eng, ids, prefix, monkeypatch):
    _quantize_with(monkeypatch, rounding=torch.trunc)
    assert {"check_torchq", "check_step"} <= quant_results(eng, ids, prefix)


def test_per_tensor_scales_where_per_channel_was_asked(eng, ids, prefix, monkeypatch):
    _quantize_with(monkeypatch, granularity_of=lambda spec: QuantSpec(spec.bits, "tensor", True, spec.group_size)
                   if spec.granularity == "channel" else spec)
    assert "check_torchq" in quant_results(eng, ids, prefix)


def test_scale_rounded_to_nearest_fp16_instead_of_up(eng, ids, prefix, monkeypatch):
    monkeypatch.setattr(cq, "_round_up", lambda scale, dtype: scale.to(dtype).float())
    assert "check_torchq" in quant_results(eng, ids, prefix)
