"""The engine against transformers on tiny random models (fast; no real weights needed)."""
import pytest
import torch

from lib.model.from_transformers import engine_from_hf
from lib.core.hooks import Recorder
from lib.core.spec import spec_from_config
from tests.conftest import tiny_gemma3, tiny_llama

TOL = 1e-5


def hf_logits(hf, ids):
    with torch.no_grad():
        return hf(ids).logits


@pytest.mark.parametrize("make", [tiny_gemma3, lambda: tiny_llama("llama"), lambda: tiny_llama("qwen2"),
                                  lambda: tiny_llama("qwen3")], ids=["gemma3", "llama", "qwen2", "qwen3"])
def test_prefill_logits_match_transformers(make):
    hf = make()
    eng = engine_from_hf(hf)
    ids = torch.randint(0, 97, (2, 30), generator=torch.Generator().manual_seed(1))
    ours = eng.forward(ids, eng.new_cache(batch=2), logits="all")
    torch.testing.assert_close(ours, hf_logits(hf, ids), atol=TOL, rtol=0)


def test_decode_past_sliding_window_matches_transformers():
    """Window 8, 40 tokens: local layers must stop seeing old keys, global ones must not."""
    hf = tiny_gemma3(window=8)
    eng = engine_from_hf(hf)
    ids = torch.randint(0, 97, (1, 40), generator=torch.Generator().manual_seed(2))
    ref = hf_logits(hf, ids)[0]
    cache = eng.new_cache()
    eng.forward(ids[:, :5], cache)
    for t in range(5, 40):
        out = eng.forward(ids[:, t:t + 1], cache)[0, -1]
        torch.testing.assert_close(out, ref[t], atol=TOL, rtol=0)


def test_gemma3_details_in_spec():
    spec = spec_from_config(tiny_gemma3().config)
    assert spec.windows == (8, 8, 8, 8, 8, None)
    assert spec.rope_thetas[0] == 10_000.0 and spec.rope_thetas[5] == 1_000_000.0
    assert spec.norm_offset == 1.0 and spec.qk_norm and spec.sandwich_norm
    assert spec.embed_scale == pytest.approx(8.0) and spec.attn_scale == pytest.approx(0.25)


def test_engine_does_not_modify_the_transformers_model():
    hf = tiny_gemma3()
    before = {k: v.clone() for k, v in hf.state_dict().items()}
    eng = engine_from_hf(hf)
    eng.forward(torch.tensor([[1, 2, 3]]), eng.new_cache())
    for k, v in hf.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_crop_rollback_equals_fresh_prefill():
    hf = tiny_gemma3()
    eng = engine_from_hf(hf)
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    cache = eng.new_cache()
    eng.forward(ids, cache)
    eng.forward(torch.tensor([[11, 12, 13]]), cache)   # speculative tokens, then rejected
    cache.crop(6)
    a = eng.forward(torch.tensor([[20]]), cache)
    fresh = eng.new_cache()
    eng.forward(ids, fresh)
    b = eng.forward(torch.tensor([[20]]), fresh)
    assert torch.equal(a, b)


def test_evicted_positions_get_zero_attention():
    hf = tiny_gemma3(window=64)
    eng = engine_from_hf(hf)
    cache = eng.new_cache()
    eng.forward(torch.arange(1, 13)[None], cache)
    for layer in range(6):
        cache.evict_older_than(layer, 4)
    rec = Recorder({"probs"})
    eng.forward(torch.tensor([[3]]), cache, hooks=rec.hooks())
    assert cache.positions(0)[0].tolist() == list(range(4, 13))
    for layer in range(6):
        p = rec[("probs", layer)]
        assert p.shape[-1] == 9 and torch.allclose(p.sum(-1), torch.ones(()))


def test_window_mask_gives_exact_zeros():
    hf = tiny_gemma3(window=4)
    eng = engine_from_hf(hf)
    rec = Recorder({"probs"}, layers={0, 5})
    eng.forward(torch.arange(1, 11)[None], eng.new_cache(), hooks=rec.hooks())
    local, glob = rec[("probs", 0)][0], rec[("probs", 5)][0]   # (H, T, S)
    q, k = torch.arange(10)[:, None], torch.arange(10)[None]
    outside = (k <= q - 4) | (k > q)
    assert torch.all(local[:, outside] == 0)
    assert torch.all(glob[:, k.expand(10, 10) > q] == 0) and torch.all(glob[:, (k <= q) & (k <= q - 4)] > 0)


def test_hook_can_replace_an_activation():
    hf = tiny_gemma3()
    eng = engine_from_hf(hf)
    ids = torch.tensor([[1, 2, 3, 4]])
    base = eng.forward(ids, eng.new_cache())
    same = eng.forward(ids, eng.new_cache(), hooks={"mlp_act": lambda l, x: None})
    zeroed = eng.forward(ids, eng.new_cache(), hooks={"mlp_act": lambda l, x: torch.zeros_like(x)})
    assert torch.equal(base, same) and not torch.allclose(base, zeroed)


def test_reorder_selects_batch_rows():
    hf = tiny_gemma3()
    eng = engine_from_hf(hf)
    cache = eng.new_cache(batch=2)
    eng.forward(torch.tensor([[1, 2, 3], [4, 5, 6]]), cache)
    cache.reorder(torch.tensor([1, 1]))
    a = eng.forward(torch.tensor([[7], [7]]), cache)
    single = eng.new_cache()
    eng.forward(torch.tensor([[4, 5, 6]]), single)
    b = eng.forward(torch.tensor([[7]]), single)
    torch.testing.assert_close(a[0], b[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(a[1], b[0], atol=1e-5, rtol=0)


def test_cache_bytes_formula():
    hf = tiny_gemma3()
    spec = spec_from_config(hf.config)
    eng = engine_from_hf(hf)
    cache = eng.new_cache()
    eng.forward(torch.arange(1, 21)[None], cache)
    assert cache.nbytes() == spec.kv_bytes_per_token(4) * 20


def test_left_padding_with_positions_matches_unpadded():
    hf = tiny_gemma3(window=64)
    eng = engine_from_hf(hf)
    short = torch.tensor([[5, 6, 7]])
    alone = eng.forward(short, eng.new_cache())
    padded = torch.tensor([[0, 0, 5, 6, 7]])
    pos = torch.tensor([[-1, -1, 0, 1, 2]])
    out = eng.forward(padded, eng.new_cache(), positions=pos)
    torch.testing.assert_close(out, alone, atol=1e-5, rtol=0)


def test_head_max_diff_equals_the_whole_logits_compared():
    """The ring check's comparison, a few rows at a time: the same numbers as both (N, V)
    logits computed whole and compared."""
    eng = engine_from_hf(tiny_gemma3())
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(37, eng.spec.hidden, generator=g), torch.randn(37, eng.spec.hidden, generator=g)
    a, b = eng.head(x[None])[0].float(), eng.head(y[None])[0].float()
    diff, scale = eng.head_max_diff(x, y, rows=8)
    assert diff == pytest.approx(float((a - b).abs().max()), rel=1e-6)
    assert scale == pytest.approx(float(b.abs().max()), rel=1e-6)
    assert eng.head_max_diff(y, y) == (0.0, pytest.approx(scale, rel=1e-6))
