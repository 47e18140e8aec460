"""The engine's layer as two compiled calls (lib/core/one_call.py, lib/core/layer.py) is the eager
layer bit for bit: the hook-free path (compiled) against the same forward with a hook that reads
nothing inside a layer (the eager building blocks one by one), on tiny Gemma 3, Llama, Qwen2 (q/k/v biases) and
Qwen3 (q/k norms) models: prompts past a sliding window, a padded batch, decoding steps."""
import pytest
import torch

from lib.core import one_call
from lib.core.layer import attention_in, attention_out_and_mlp
from lib.model.from_transformers import engine_from_hf
from tests.conftest import tiny_gemma3, tiny_llama

EAGER = {"mlp_act": lambda layer, x: None}         # a hook inside the halves: the engine runs the eager layer


def test_this_torch_compiles_the_layer():
    """Otherwise every comparison below would compare the eager layer with itself."""
    assert one_call.enabled()
    assert one_call.compiled(attention_in) is not None
    assert one_call.compiled(attention_out_and_mlp) is not None


@pytest.mark.parametrize("kind", ["gemma3", "llama", "qwen2", "qwen3"])
def test_compiled_layer_equals_the_eager_layer(kind):
    eng = engine_from_hf(tiny_gemma3(window=8) if kind == "gemma3" else tiny_llama(kind))
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 97, (2, 21), generator=g)              # 21 tokens: past the window of 8
    pos = torch.arange(21).repeat(2, 1)
    pos[1, :5] = -1                                                # row 1: five padding entries
    pos[1, 5:] = torch.arange(16)
    out = []
    for hooks in (None, EAGER):
        cache = eng.new_cache(2, 32)
        prefill = eng.forward(ids, cache, positions=pos, hooks=hooks, logits="all")           # (2, 21, V)
        steps = [eng.forward(ids[:, i:i + 1], cache, positions=pos[:, -1:] + 1 + i, hooks=hooks)
                 for i in range(3)]                                                          # decoding
        out.append((prefill, steps))
    (a, a_steps), (b, b_steps) = out
    assert torch.equal(a, b)
    assert all(torch.equal(x, y) for x, y in zip(a_steps, b_steps))


def test_hooks_outside_the_halves_see_the_same_activations_on_either_path():
    """Hooks on q, k, v and resid_out run between and after the compiled halves: they read what
    the eager layer hands them, and a replacing one changes the result the same way."""
    eng = engine_from_hf(tiny_gemma3(window=8))
    ids = torch.randint(0, 97, (1, 12), generator=torch.Generator().manual_seed(2))
    runs = []
    for extra in ({}, EAGER):
        seen = {}

        def reader(name):
            def read(layer, t):
                seen[name, layer] = t.clone()
            return read
        hooks = {n: reader(n) for n in ("q", "k", "v")}
        hooks["resid_out"] = lambda l, t: t * 0.5 if l == 2 else None
        logits = eng.forward(ids, eng.new_cache(1, 16), hooks={**hooks, **extra}, logits="all")
        runs.append((seen, logits))
    (seen_a, a), (seen_b, b) = runs
    assert seen_a.keys() == seen_b.keys() and len(seen_a) == 3 * 6
    assert all(torch.equal(seen_a[k], seen_b[k]) for k in seen_a)
    assert torch.equal(a, b)
    assert not torch.equal(a, eng.forward(ids, eng.new_cache(1, 16), logits="all"))


def test_a_hook_still_sees_and_replaces_activations():
    """With hooks the engine runs the eager layer: a replacing hook changes the result."""
    eng = engine_from_hf(tiny_llama("llama"))
    ids = torch.tensor([[1, 2, 3, 4]])
    plain = eng.forward(ids, eng.new_cache(1, 8), logits="all")
    zeroed = eng.forward(ids, eng.new_cache(1, 8), logits="all", hooks={"mlp_act": lambda l, x: torch.zeros_like(x)})
    assert not torch.allclose(plain, zeroed)


def test_switched_off_nothing_is_compiled(monkeypatch):
    monkeypatch.setenv(one_call.ENV, "0")
    monkeypatch.setattr(one_call, "_compiled", {})
    assert one_call.compiled(attention_in) is None


@pytest.mark.parametrize("rows", [1, 3, 32])
def test_compiled_q8_head_equals_its_eager_loop(rows):
    """Q8VocabMatrix.logits and .argmax for up to FEW_ROWS rows run expanded_product and
    expanded_argmax compiled; the chunked eager loops (the path for more rows) give the same
    logits and ids bit for bit, a last short chunk too."""
    from lib.core.q8_rows import expanded_argmax, expanded_product
    from lib.core.vocab_matrix import Q8VocabMatrix

    g = torch.Generator().manual_seed(1)
    V, D = 3 * Q8VocabMatrix.CHUNK + 200, 64
    E = Q8VocabMatrix(torch.randint(-127, 128, (V, D), generator=g, dtype=torch.int8),
                      torch.rand(V, D // 32, generator=g) / 50)
    x = torch.randn(rows, D, generator=g)
    x[0] = 0.0                                                               # a row of ties: the first id wins
    assert one_call.compiled(expanded_product) is not None and one_call.compiled(expanded_argmax) is not None
    fast, fast_ids = E.logits(x), E.argmax(x)
    with one_call.eager_only():                                              # as where it cannot compile
        eager, eager_ids = E.logits(x), E.argmax(x)
    assert torch.equal(fast, eager) and torch.equal(fast_ids, eager_ids)
    assert torch.allclose(eager, x @ E.dense(), atol=1e-4)
    assert torch.equal(fast_ids, fast.argmax(-1)) and fast_ids[0] == 0
