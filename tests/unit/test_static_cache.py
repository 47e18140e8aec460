"""The static (CUDA-graph-ready) cache gives the same results as the growing cache."""
import torch

from lib.model.from_transformers import engine_from_hf
from lib.decoding.generate import greedy
from lib.core.cache.static import StaticKVCache
from lib.decoding.graphed_greedy import GraphedGreedyDecoder
from tests.conftest import tiny_gemma3


def test_static_cache_logits_equal_dynamic_cache_past_the_window():
    hf = tiny_gemma3(window=8)
    eng = engine_from_hf(hf)
    ids = torch.randint(0, 97, (1, 30), generator=torch.Generator().manual_seed(3))
    dyn, stat = eng.new_cache(), StaticKVCache(eng.spec, 1, 64)
    a = eng.forward(ids[:, :10], dyn)
    b = eng.forward(ids[:, :10], stat, positions=torch.arange(10)[None])
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    for t in range(10, 30):
        a = eng.forward(ids[:, t:t + 1], dyn)
        b = eng.forward(ids[:, t:t + 1], stat, positions=torch.tensor([[t]]))
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


def test_graphed_decoder_equals_greedy_on_cpu():
    hf = tiny_gemma3(window=8)
    eng = engine_from_hf(hf)
    prompt = [1, 5, 7, 9, 11]
    assert GraphedGreedyDecoder(eng, 64).generate(prompt, 20) == greedy(eng, prompt, 20).new_ids
