"""Mutation tests for the rope-shift page: realistic bugs planted in the concept's code
(lib.concepts.rope_shift.rope_shift) must turn at least one of the page's live checks red;
without them every check is green. Real model, one short prompt, Δ = 256."""
import pytest

from lib.concepts.rope_shift import checks, hf_rotation, rope_shift as R
from lib.core.rope import rerotate
from lib.decoding import generate

pytestmark = pytest.mark.real_model
PROMPT = "Alice gave Bob a book because she wanted"
DELTA, LAYER = 256, 5


def key(text_key, **_):
    return text_key


@pytest.fixture(scope="module")
def setup(real_model):
    ids = tuple(real_model.tokenizer(PROMPT)["input_ids"])
    raw = R.raw_qk(real_model.engine, ids, LAYER)
    return real_model.engine, ids, R.joint_shift_error(raw, checks.CHECK_DELTAS), \
        generate.next_token_logits(real_model.engine, ids)


def failed(setup):
    engine, ids, jerr, base = setup
    out = R.shift_outcome(engine, ids, DELTA)
    hf = hf_rotation.hf_moved_key_error(engine, ids, DELTA)
    return [r.name for r in checks.page_checks(jerr, out, hf, base, LAYER, key) if not r.passed]


def test_all_green_without_a_bug(setup):
    assert failed(setup) == []


def test_rerotation_with_the_wrong_sign(setup, monkeypatch):
    """moved_cache rotates the cached keys back by Δ instead of forward."""
    real = R.moved_cache
    monkeypatch.setattr(R, "moved_cache", lambda cache, delta, inv, rot: _moved(real, cache, delta, inv, rot, sign=-1))
    assert {"check_rerot", "check_hf", "check_relabel"} & set(failed(setup))


def test_one_theta_for_every_layer(setup, monkeypatch):
    """moved_cache re-rotates every layer with layer 0's (local θ) frequencies."""
    real = R.moved_cache
    monkeypatch.setattr(R, "moved_cache", lambda cache, delta, inv, rot: real(cache, delta, [inv[0]] * len(inv), rot))
    assert {"check_rerot", "check_hf"} & set(failed(setup))


def _moved(real, cache, delta, inv, rot, sign):
    out = real(cache, delta, inv, False)                 # relabelled, then rotated by sign * Δ
    if rot:
        for l in range(out.n_layers):
            k = out.keys(l)
            k.copy_(rerotate(k, sign * delta, inv[l].to(k.device)).to(k.dtype))
    return out
