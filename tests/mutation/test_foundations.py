"""Mutation tests for the shared foundations (issue 32): a plausible bug planted in the engine,
the Q8_0 vocabulary, RoPE, the spec, the dense KV cache or the batching scheduler must turn a
live check red — the model-check panel's (lib/concepts/model_check/checks.py: the engine's
layers against transformers' `Gemma3DecoderLayer`, the vocabulary against `gguf`, the spec
against the config; shown on every page through its link), for the spec also the config
line that attention-scaling, gqa, rope-shift and sliding-window show (`page.spec_checks`), and
for batching paged-attention's batching line. The sampler and the speculative step are planted
in tests/mutation/test_temperature.py, test_top_k_top_p.py (also vocab_max.top_k) and
test_speculative_acceptance.py.

Real model: these bugs only show on real weights. Fast: the check functions only (no page
render), a 13-token prompt, the layers each bug reaches (the recording forward stops after the
last one), and the 600-token prompt only through layer 0 for the window bugs (~25 s in all on an idle machine)."""
import copy
import weakref
from dataclasses import replace
from typing import Optional

import pytest
import torch

from lib.concepts.model_check import checks, foundation
from lib.core import engine as engine_mod
from lib.core import layer as layer_mod
from lib.core import one_call, rope
from lib.core.cache.dense import KVCache
from lib.core.vocab_matrix import Q8VocabMatrix
from lib.decoding import batching

pytestmark = pytest.mark.real_model
PROMPT = "The capital of France is Paris, and the capital of Japan is"
LAYERS = (0, 5)          # a local (sliding) and the first global layer of Gemma 3 270M


def key(text_key, /, **_):
    return text_key


@pytest.fixture(scope="module")
def m(real_model):
    if not foundation.available(real_model):
        pytest.skip("the foundation references need the bundled GGUF")
    assert real_model.config["layer_types"][5] == "full_attention"
    return real_model


def ids_of(m):
    return torch.tensor(m.tokenizer(PROMPT).input_ids)


def layers_red(m, ids=None, layers=LAYERS, engine=None) -> list[int]:
    lcs = foundation.layer_reference.layer_checks(engine or m.engine, m.config, foundation.gguf_weights.bundled(),
                                                  ids_of(m) if ids is None else ids, layers)
    return [lc.layer for lc in lcs if not checks.layer_result(lc, key).passed]


def long_ids(m):
    return foundation.long_ids(m)          # 600 tokens: past the 512-token window


def engine_with_spec(m, spec):
    """The engine as Engine(spec, weights) builds it for another spec (same weight tensors)."""
    e = copy.copy(m.engine)
    e.spec = spec
    e.inv_freq = [rope.inv_frequencies(spec.head_dim, th) for th in spec.rope_thetas]
    return e


def test_all_green_without_a_bug(m):
    assert layers_red(m) == []
    assert layers_red(m, long_ids(m), (0,)) == []
    assert foundation.rows_max_diff(m, ids_of(m)) <= checks.ROWS_TOL
    assert all(r.passed for r in checks.config_results(m.spec, m.config, key))


def plant(monkeypatch, module, name: str, mutant) -> None:
    """A bug in one building block of the engine's layer: where the step-by-step layer reads it
    (its module, and the engine's own import of it) and in the compiled halves, which this test
    compiles afresh from the planted code (lib/core/one_call.py; the mutant is a typed function
    so that TorchScript compiles it too). The model check runs the compiled halves (its hooks
    are outside them), as every hook-free forward does."""
    monkeypatch.setattr(module, name, mutant)
    if hasattr(engine_mod, name):
        monkeypatch.setattr(engine_mod, name, mutant)
    monkeypatch.setattr(one_call, "_compiled", {})
    # TorchScript keeps each function it compiled (torch.jit._state): a fresh, empty store for
    # this test, so the halves are compiled again from the planted code (restored after)
    monkeypatch.setattr(torch.jit._state, "_jit_caching_layer", weakref.WeakKeyDictionary())
    assert None not in (one_call.compiled(layer_mod.attention_in), one_call.compiled(layer_mod.attention_out_and_mlp))


# ---- lib/core/layer.py (the engine's layer) --------------------------------------------------
def test_engine_window_one_key_too_small_shows_only_past_the_window(m, monkeypatch):
    real = layer_mod.attention_mask

    def mutant(q_pos: torch.Tensor, k_pos: torch.Tensor, window: Optional[int], pad: int = -1) -> torch.Tensor:
        return real(q_pos, k_pos, window - 1 if window is not None else window, pad)
    plant(monkeypatch, layer_mod, "attention_mask", mutant)
    assert layers_red(m) == []                        # a 13-token prompt cannot see it ...
    assert layers_red(m, long_ids(m), (0,)) == [0]    # ... the model check's 600-token prompt does


def test_engine_norm_forgets_gemmas_plus_one(m, monkeypatch):
    real = layer_mod.rms_norm

    def mutant(x: torch.Tensor, weight: torch.Tensor, eps: float, offset: float,
               dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        return real(x, weight, eps, 0.0, dtype)
    plant(monkeypatch, layer_mod, "rms_norm", mutant)
    assert layers_red(m) == list(LAYERS)


# ---- lib/core/vocab_matrix.py ---------------------------------------------------------------
def test_q8_groups_read_with_the_previous_groups_scale(m, monkeypatch):
    E = m.engine.embed
    assert isinstance(E, Q8VocabMatrix)
    shifted = torch.roll(E.scales, 1, dims=1)                 # group j scaled by group j-1's scale
    monkeypatch.setattr(E, "scales", shifted)
    # the model check's rows line (its top-logits line reads the same rows through the LM head;
    # the whole-vocabulary float64 product behind it costs ~2 s, so it is not rerun here)
    assert foundation.rows_max_diff(m, ids_of(m)) > checks.ROWS_TOL


# ---- lib/core/rope.py -----------------------------------------------------------------------
def test_rope_rotate_half_with_the_sign_on_the_wrong_half(m, monkeypatch):
    def wrong(x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((x2, -x1), dim=-1)
    plant(monkeypatch, rope, "rotate_half", wrong)
    assert layers_red(m) == list(LAYERS)


# ---- lib/core/spec.py -----------------------------------------------------------------------
def test_spec_attn_scale_without_its_square_root(m):
    bad = replace(m.spec, attn_scale=1.0 / m.config["query_pre_attn_scalar"])
    assert [r.passed for r in checks.config_results(bad, m.config, key, ("scale",))] == [False]
    assert layers_red(m, engine=engine_with_spec(m, bad)) == list(LAYERS)


def test_spec_local_and_global_rope_bases_swapped(m):
    lo, hi = min(m.spec.rope_thetas), max(m.spec.rope_thetas)
    bad = replace(m.spec, rope_thetas=tuple(lo if th == hi else hi for th in m.spec.rope_thetas))
    assert [r.passed for r in checks.config_results(bad, m.config, key, ("rope",))] == [False]
    assert layers_red(m, engine=engine_with_spec(m, bad)) == list(LAYERS)


def test_spec_window_one_too_small(m):
    bad = replace(m.spec, windows=tuple(w - 1 if w else w for w in m.spec.windows))
    assert [r.passed for r in checks.config_results(bad, m.config, key, ("window",))] == [False]
    assert layers_red(m, long_ids(m), (0,), engine=engine_with_spec(m, bad)) == [0]


# ---- lib/core/cache/dense.py ----------------------------------------------------------------
def test_dense_cache_stores_positions_one_early(m, monkeypatch):
    real = KVCache.append
    monkeypatch.setattr(KVCache, "append", lambda self, l, k, v, pos: real(self, l, k, v, pos - 1))
    assert layers_red(m) == list(LAYERS)            # each token sees the next one: the future leaks


# ---- lib/decoding/batching.py ---------------------------------------------------------------
def test_batched_rows_read_at_the_padded_end(m, monkeypatch):
    """The panel that turns red: paged-attention's batching line (checks.batch_check over
    batch_reference.batched_vs_alone: the prompts batched against each prompt alone through the
    engine, which the model check above proves against transformers; a consistency check)."""
    from lib.concepts.paged_attention import checks as pa_checks
    from lib.reference.batch_reference import batched_vs_alone

    def bad(engine, requests):
        T = max(r[0].shape[1] for r in requests)
        fixed = [(torch.nn.functional.pad(r[0], (0, T - r[0].shape[1])), r[1]) for r in requests]
        return real(engine, fixed)                  # the short prompt's row read at the padded end
    real = batching.batched_forward
    ids = tuple(ids_of(m).tolist())
    prompts = (ids[:5], ids)
    assert pa_checks.batch_check(batched_vs_alone(m.engine, prompts), key).passed
    monkeypatch.setattr(batching, "batched_forward", bad)
    assert not pa_checks.batch_check(batched_vs_alone(m.engine, prompts), key).passed
