"""Quantized KV cache, ring (sliding-window) cache and the memory calculator on tiny models."""
import pytest
import torch

from lib.core.quantization import activation_capture as ac
from lib.concepts.kv_quantization import kv_quant as kq
from lib.concepts.model_memory import memory_accounting as ma
from lib.model.from_transformers import engine_from_hf
from lib.core.spec import spec_from_config
from lib.core.quantization.quantize import QuantSpec, storage_bytes
from lib.core.cache.ring import RingKVCache, ring_capacities
from tests.conftest import tiny_gemma3


@pytest.fixture(scope="module")
def eng():
    hf = tiny_gemma3(window=8)
    return engine_from_hf(hf)


def ids(n, seed=0):
    return torch.randint(0, 97, (1, n), generator=torch.Generator().manual_seed(seed))


def test_bytes_formula_equals_cache_tensor_bytes(eng):
    s = eng.spec
    for n in (1, 7, 30):
        cache = eng.new_cache(capacity=4)      # grows by doubling: nbytes counts live entries only
        eng.forward(ids(n), cache)
        assert cache.nbytes() == kq.kv_bytes_formula(s.n_layers, s.n_kv_heads, s.head_dim, n, 1, 4)


def test_no_quantization_equals_the_plain_cache(eng):
    x = ids(20, 1)
    ref = eng.forward(x, eng.new_cache(), logits="all")
    qc = kq.QuantizedKVCache(eng.spec.n_layers, 1, eng.spec.n_kv_heads, eng.spec.head_dim,
                             policy=kq.KVQuantPolicy(None, None))
    assert torch.equal(eng.forward(x, qc, logits="all"), ref)


def test_16_bit_cache_is_practically_lossless_and_2_bit_is_not(eng):
    x = ids(24, 2)
    out = {}
    for b in (16, 2):
        pol = kq.KVQuantPolicy(QuantSpec(b, "token"), QuantSpec(b, "token"))
        out[b] = kq.run_policy(eng, tuple(x[0].tolist()), 8, pol)
    assert out[16].effect.kl_mean < 1e-6 and out[16].attn_max < 1e-4
    assert out[2].effect.kl_mean > 100 * out[16].effect.kl_mean and out[2].attn_tv > out[16].attn_tv


def test_values_only_leaves_layer0_attention_unchanged(eng):
    x = tuple(ids(24, 3)[0].tolist())
    v_only = kq.run_policy(eng, x, 8, kq.KVQuantPolicy(None, QuantSpec(2, "token")))
    k_only = kq.run_policy(eng, x, 8, kq.KVQuantPolicy(QuantSpec(2, "token"), None))
    assert v_only.attn_max_layer0 == 0.0 and v_only.effect.kl_mean > 0
    assert k_only.attn_max_layer0 > 0


def test_residual_keeps_recent_entries_exact(eng):
    x = ids(12, 4)
    plain = eng.new_cache()
    eng.forward(x, plain)
    pol = kq.KVQuantPolicy(QuantSpec(2, "tensor"), QuantSpec(2, "tensor"), residual=5)
    q = kq.QuantizedKVCache.from_cache(plain, pol)
    for l in range(eng.spec.n_layers):
        assert torch.equal(q.keys(l)[:, :, -5:], plain.keys(l)[:, :, -5:])
        assert not torch.equal(q.keys(l)[:, :, :7], plain.keys(l)[:, :, :7])
    # stored bytes: 7 quantized entries (codes + one scale) + 5 full-precision entries, K and V
    s = eng.spec
    block = (1, s.n_kv_heads, 7, s.head_dim)
    assert q.nbytes() == s.n_layers * (2 * storage_bytes(block, pol.key) + 2 * 5 * s.n_kv_heads * s.head_dim * 4)
    assert q.nbytes() == kq.predicted_bytes(s, (12,), pol)


def test_packed_codes_round_trip_and_really_take_b_bits():
    from lib.core.cache.quantized import Packed, pack, unpack
    for b in (2, 4, 8, 16):
        codes = torch.randint(-(2 ** (b - 1)) + 1, 2 ** (b - 1), (3, 5, 16), generator=torch.Generator().manual_seed(b))
        data = pack(codes, b)
        assert torch.equal(unpack(data, b), codes)
        assert data.untyped_storage().nbytes() == 3 * 5 * 16 * b // 8
    x = torch.randn(1, 2, 6, 16, generator=torch.Generator().manual_seed(0)) * 3
    p = Packed.of(x, QuantSpec(4, "token"))
    assert p.nbytes() == 2 * 6 * 16 // 2 + 2 * 6 * 2                       # int4 codes + one fp16 scale per token
    assert ((p.dequant() - x).abs() <= p.step() / 2 * 1.0001).all()


@pytest.mark.slow  # 40 single-token forwards, each through two caches
def test_ring_cache_gives_the_same_logits_as_the_full_cache(eng):
    """Window 8: decode 40 tokens one at a time with a ring of 8 slots on local layers."""
    x = ids(40, 5)
    full, ring = eng.new_cache(), RingKVCache(eng.spec, 1, 40, chunk=1)
    assert ring.capacity == [8, 8, 8, 8, 8, 40]
    for t in range(40):
        a = eng.forward(x[:, t:t + 1], full)
        b = eng.forward(x[:, t:t + 1], ring)
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


def test_ring_cache_with_chunks_and_its_bytes(eng):
    x = ids(40, 6)
    ref = eng.forward(x, eng.new_cache(), logits="all")
    ring = RingKVCache(eng.spec, 1, 40, chunk=4)
    outs = [eng.forward(x[:, s:s + 4], ring, logits="all") for s in range(0, 40, 4)]
    torch.testing.assert_close(torch.cat(outs, 1), ref, atol=1e-5, rtol=0)
    assert ring.nbytes() == ma.kv_cache_bytes(eng.spec, 40, windowed=True, chunk=4, positions=False)
    too_big = torch.zeros(1, 1, 12, 16)                  # 12 tokens at once would wrap an 11-slot ring
    with pytest.raises(ValueError, match="chunk"):
        RingKVCache(eng.spec, 1, 40, chunk=4).append(0, too_big, too_big, torch.arange(12)[None])


def test_ring_capacities():
    w = (512, None, 512)
    assert ring_capacities(w, 100) == [100, 100, 100]
    assert ring_capacities(w, 4096, chunk=64) == [575, 4096, 575]


def test_parameter_count_matches_the_model():
    hf = tiny_gemma3()
    spec = spec_from_config(hf.config)
    assert ma.parameter_count(spec) == sum(p.numel() for p in hf.parameters())


def test_kv_cache_bytes_full_and_windowed(eng):
    s = eng.spec
    per_token = 2 * s.n_layers * s.n_kv_heads * s.head_dim * 4
    assert ma.kv_cache_bytes(s, 100, positions=False) == 100 * per_token
    assert ma.kv_cache_bytes(s, 100, positions=True) == 100 * per_token + 8 * 100 * s.n_layers
    assert ma.kv_cache_bytes(s, 4, windowed=True, chunk=1) == ma.kv_cache_bytes(s, 4)      # below the window
    local = 2 * s.n_kv_heads * s.head_dim * 4
    assert ma.kv_cache_bytes(s, 100, windowed=True, chunk=1, positions=False) == 5 * 8 * local + 100 * local


def test_capture_and_identity_injection(eng):
    x = tuple(ids(16, 7)[0].tolist())
    cap = ac.capture(eng, x)
    assert cap.acts["mlp_act"].shape == (6, 15, eng.spec.intermediate)
    assert cap.acts["resid_out"].shape == (6, 15, eng.spec.hidden)
    same = ac.effect_of(eng, x, cap.hidden, "mlp_act", 2, lambda a: a)
    assert same.kl_mean == 0.0 and same.ppl_new == same.ppl_ref and same.top1_agree == 1.0
    changed = ac.effect_of(eng, x, cap.hidden, "mlp_act", 2, lambda a: a * 0)
    assert changed.kl_mean > 0


def test_experiments_grouped_by_the_settings_they_read_give_the_same_rows(eng):
    """activation-outliers caches one injection_rows call per group of experiments (a new group
    size reruns one forward): the groups' rows are the rows of one call with every setting, and
    a setting a group does not read is not in its arguments."""
    x = tuple(ids(16, 7)[0].tolist())
    cap = ac.capture(eng, x)
    acts = cap.acts["mlp_act"][2]
    whole = ac.injection_rows(eng, x, cap.hidden, acts, "mlp_act", 2, 4, 16, 0.5)
    groups = ac.experiment_groups(4, 16, 0.5)
    assert sorted(k for kinds, *_ in groups for k in kinds) == sorted(ac.EXPERIMENTS)
    parts = {r.kind: r for kinds, b, g, c in groups
             for r in ac.injection_rows(eng, x, cap.hidden, acts, "mlp_act", 2, b, g, c, kinds)}
    for r in whole:
        assert parts[r.kind].sqnr_db == pytest.approx(r.sqnr_db, abs=1e-9)
        assert parts[r.kind].effect.kl_mean == pytest.approx(r.effect.kl_mean, rel=1e-6, abs=1e-12)
    for other, reruns in ((ac.experiment_groups(4, 32, 0.5), [("group",)]),                # another group size
                          (ac.experiment_groups(4, 16, 0.9), [("clip",), ("clip_tensor",)])):  # another clip
        assert [kinds for kinds, *args in other if (kinds, *args) not in groups] == reruns


def test_outlier_channels():
    x = torch.randn(50, 32, generator=torch.Generator().manual_seed(0))
    x[:, 3] *= 40
    x[7, 20] = 300
    assert ac.outlier_channels(x).tolist() == [3, 20]


def test_grid_cells_are_short_language_formatted_and_hover_in_full():
    """The |Δ perplexity| row once read "0.1807200.0701460.036788": every cell text is now at
    most 6 characters (2 significant digits), in the page's number format, with the full value
    in the hover."""
    import numpy as np

    from lib.concepts.kv_quantization.figures import cell_text, grid_figure
    from lib.ui.i18n import format_number

    values = [0.180720, 0.070146, 0.036788, 1.0, 12.34, 0.00123, 3.4e-05, 7.2e-9, 0.0, 1234.5, 98765.0, 3.2e7]
    for lang in ("en", "id"):
        fmt = lambda v, spec, lang=lang: format_number(v, spec, lang)   # noqa: E731
        for v in values:
            s = cell_text(v, fmt)
            assert len(s) <= 6, (v, s)
            back = float(s.replace(".", "").replace(",", ".") if lang == "id" else s.replace(",", ""))
            assert back == pytest.approx(v, rel=0.06, abs=1e-12), (v, s)
        assert cell_text(0.18072, fmt) == ("0.18" if lang == "en" else "0,18")
        # two significant digits in every cell, trailing zeros kept (".2g" wrote 0.1 beside 0.18)
        assert [cell_text(v, fmt) for v in (0.1, 1.0, 0.0012)] == (
            ["0.10", "1.0", "0.0012"] if lang == "en" else ["0,10", "1,0", "0,0012"])
        z = np.array([[0.180720, 0.070146, 0.036788], [1.5, 2.25, 0.0009]])
        fig = grid_figure([8, 4], ["a", "b", "c"], [("m", z, ",.5g")], "t", fmt)
        tr = fig.data[0]
        assert all(len(c) <= 6 for row in tr.text for c in row)
        assert tr.customdata[0][0] == fmt(0.180720, ",.5g") and "customdata" in tr.hovertemplate
