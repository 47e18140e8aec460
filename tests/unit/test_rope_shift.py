"""RoPE shift: joint shifts keep scores; re-rotated cached keys equal recomputed keys."""
import math

import numpy as np
import torch

from lib.concepts.rope_shift import rope_shift as R
from lib.model.from_transformers import engine_from_hf
from lib.core.rope import inv_frequencies
from tests.conftest import tiny_gemma3, tiny_llama


def _raw(seed=0, H=4, Hkv=1, T=6, d=32, theta=10_000.0):
    g = torch.Generator().manual_seed(seed)
    return R.RawQK(0, torch.randn(H, T, d, generator=g, dtype=torch.float64),
                   torch.randn(Hkv, T, d, generator=g, dtype=torch.float64), inv_frequencies(d, theta), 0.25)


def test_joint_shift_keeps_the_score():
    raw = _raw()
    deltas = np.array([0, 1, 17, 500, 12345])
    joint = R.score_at(raw, 2, 5, 1, 5 + deltas, 1 + deltas)
    np.testing.assert_allclose(joint, joint[0], atol=1e-9)
    key_only = R.score_at(raw, 2, 5, 1, np.full(5, 5), 1 + deltas)
    assert np.ptp(key_only) > 1e-3                          # moving only the key does change it
    assert R.joint_shift_error(raw, (1, 100, 4000)) < 1e-3


def test_spectrum():
    sp = R.spectrum(256, (10_000.0, 1_000_000.0), 32_768)
    assert math.isclose(sp.wavelengths[0, 0], 2 * math.pi, rel_tol=1e-6)
    assert np.all(np.diff(sp.wavelengths, axis=1) > 0)      # later pairs turn slower
    assert np.all(sp.wavelengths[1] >= sp.wavelengths[0])   # larger theta: slower everywhere
    assert sp.pairs_full_turn[1] < sp.pairs_full_turn[0]


def test_rerotated_keys_equal_recomputed_keys():
    for hf in (tiny_gemma3(), tiny_llama("llama")):
        eng = engine_from_hf(hf)
        ids = tuple(range(5, 17))
        for delta in (1, 9, 100):
            out = R.shift_outcome(eng, ids, delta)
            assert out.key_error["rerotated"] <= 1e-4 * out.key_scale
            assert out.key_error["relabelled"] > 1e-2 * out.key_scale
            torch.testing.assert_close(out.logits["rerotated"], out.logits["recompute"], atol=1e-4, rtol=0)
            assert (out.logits["relabelled"] - out.logits["recompute"]).abs().max() > 1e-3


def test_moved_cache_does_not_touch_the_original():
    hf = tiny_gemma3()
    eng = engine_from_hf(hf)
    base = R.prompt_cache(eng, tuple(range(5, 12)))
    k0, p0 = base.keys(0).clone(), base.positions(0).clone()
    moved = R.moved_cache(base, 10, eng.inv_freq, True)
    assert torch.equal(base.keys(0), k0) and torch.equal(base.positions(0), p0)
    assert torch.equal(moved.positions(0), p0 + 10)


def test_transformers_rotation_oracle_equals_rerotate():
    """hf_rotation.hf_rotate_by (transformers' apply_rotary_pos_emb, float64 cos/sin) equals
    lib.core.rope.rerotate by the same Δ (up to rerotate's float32 angle rounding)."""
    from lib.concepts.rope_shift.hf_rotation import hf_rotate_by
    from lib.core.rope import rerotate

    k = torch.randn(1, 2, 5, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    ours = rerotate(k, 300, inv_frequencies(16, 10_000.0).double())
    torch.testing.assert_close(hf_rotate_by(k, 300, 10_000.0), ours.double(), atol=1e-5, rtol=0)   # rerotate: float32 angles
